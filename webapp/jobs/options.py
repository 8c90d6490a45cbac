"""What approving needs: the plan a job runs (`PlanSource`) and what the person approving
chooses (`RunOptions`). Plain values, shared by the services, the runners, forms and API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webapp.projects.models import Project

PIPELINE = "pipeline"
DATAPARALLEL = "dataparallel"


@dataclass(frozen=True)
class PlanSource:
    """What approving needs from a planning result (see `services.source_of`)."""

    project: Project
    plan: dict[str, Any]
    model_name: str
    model_size: str = "tiny"
    batch_size: int | None = None
    scheduler: str = ""
    result_id: int | None = None
    name: str = ""


@dataclass(frozen=True)
class RunOptions:
    """What the person approving chooses: the runner, steps and training knobs, and the
    runner's own options. Pipeline: `sync_mode` (the runtime's registry), `binding`,
    `micro_batches`. Data-parallel: `sync_mode` and `sync_params` name a mode of
    heterps_core.dataparallel and its parameters; `dataparallel` holds workers, slowdowns
    ("1,1,4" or a list) and backend. Errors name these fields (`binding.cpu`,
    `mode.ssp.staleness`, `dataparallel.slowdowns`)."""

    steps: int
    sync_mode: str = "bsp"
    binding: dict[str, str] | None = None
    sync_params: dict[str, Any] | None = None
    micro_batches: int | None = None
    lr: float = 0.05
    seed: int = 0
    batch_size: int | None = None
    runner: str = PIPELINE
    dataparallel: dict[str, Any] | None = None
