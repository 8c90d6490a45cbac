"""What approving needs: the plan a job runs (`PlanSource`) and what the person approving
chooses (`RunOptions`). Plain values, shared by the services, the runners, forms and API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webapp.projects.models import Project

PIPELINE = "pipeline"
DATAPARALLEL = "dataparallel"
# The runners' fields as they were before `options` held them (the API's first version, the
# CLI): still taken, and moved into `options` unchanged (a runner's input keeps these names).
FLAT_FIELDS = ("sync_mode", "sync_params", "binding", "micro_batches", "dataparallel")


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


@dataclass(frozen=True, init=False)
class RunOptions:
    """What the person approving chooses: what every job has (the runner, steps, batch size,
    learning rate, seed) and `options`, the runner's own input (its form's and serializer's
    fields: the pipeline's `sync_mode`, `binding`, `micro_batches`; the data-parallel
    runner's `sync_mode`, `sync_params`, `dataparallel`). `nested`: the caller named them
    under `options`, so errors do too (`options.binding.cpu`); the old flat keywords
    (`RunOptions(steps=8, binding=...)`) are moved into `options` and keep their names."""

    steps: int
    runner: str
    options: Mapping[str, Any]
    batch_size: int | None
    lr: float
    seed: int
    nested: bool
    budget: float | None  # dollars over all runs (None: no budget of its own)

    def __init__(self, steps: int, runner: str = PIPELINE,
                 options: Mapping[str, Any] | None = None, *, batch_size: int | None = None,
                 lr: float = 0.05, seed: int = 0, nested: bool | None = None,
                 budget: float | None = None, **flat: Any) -> None:
        unknown = sorted(set(flat) - set(FLAT_FIELDS))
        if unknown:
            raise TypeError(f"RunOptions got unexpected keywords {', '.join(unknown)}")
        given = {name: value for name, value in flat.items() if value is not None}
        values = {"steps": steps, "runner": runner, "options": {**given, **(options or {})},
                  "batch_size": batch_size, "lr": lr, "seed": seed, "budget": budget,
                  "nested": bool(options) and not given if nested is None else nested}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def field(self, name: str) -> str:
        """How the caller named the runner's field `name` (for errors)."""
        return f"options.{name}" if self.nested else name
