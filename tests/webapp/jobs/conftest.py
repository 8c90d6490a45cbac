"""A job source: the tiny CTR-DNN's sample plan in the personas' project."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs import samples


@pytest.fixture
def two_stage_plan() -> dict[str, Any]:
    return samples.ctr_plan()


@pytest.fixture
def source(personas: Any, two_stage_plan: dict[str, Any]) -> Any:
    from webapp.jobs.services import PlanSource

    return PlanSource(project=personas.project, plan=two_stage_plan, model_name=samples.MODEL,
                      model_size=samples.SIZE, batch_size=samples.BATCH, scheduler="exact")


@pytest.fixture(autouse=True)
def job_logs_in_tmp(settings: Any, tmp_path: Any) -> None:
    # Runs write their processes' logs under VAR_DIR/jobs; keep the repository's var/ clean.
    settings.VAR_DIR = tmp_path
