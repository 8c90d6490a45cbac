"""A web job's checkpoint interval (issue 26): every tenth of the run, or the plan's spot
interval when that is shorter, so a preempted spot stage loses no more than it was priced
for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.runners import pipeline
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _job(personas: Any, source: Any, spot_every: int | None) -> Job:
    job = services.approve(personas.member, source, RunOptions(steps=1000))
    if spot_every is not None:
        job.plan["stages"][0].update(market="spot", checkpoint_every=spot_every)
        job.save(update_fields=["plan"])
    return job


def test_a_plan_without_markets_checkpoints_every_tenth(personas: Any, source: Any,
                                                        tmp_path: Path) -> None:
    config = pipeline.run_config(_job(personas, source, None), tmp_path)
    assert config.checkpoint_every == 100


def test_a_spot_stage_priced_at_a_shorter_interval_sets_it(personas: Any, source: Any,
                                                           tmp_path: Path) -> None:
    config = pipeline.run_config(_job(personas, source, 7), tmp_path)
    assert config.checkpoint_every == 7


def test_a_spot_interval_longer_than_a_tenth_keeps_the_tenth(personas: Any, source: Any,
                                                            tmp_path: Path) -> None:
    config = pipeline.run_config(_job(personas, source, 400), tmp_path)
    assert config.checkpoint_every == 100
