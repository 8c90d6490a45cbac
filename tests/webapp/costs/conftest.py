"""Shared set-up of the cost tests."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background.models import Status, Work
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions


@pytest.fixture
def failed_start(personas: Any, source: Any) -> tuple[Job, float]:
    """A job whose run held its processes 2 s and failed before any mini-batch finished;
    with its $ per second."""
    job = services.approve(personas.member, source, RunOptions(steps=8))
    rate = job.predicted_cost_per_hour / 3600
    for elapsed in (0.5, 1.0, 1.5, 2.0):
        services.record_sample(job.pk, 1, {
            "step": 0, "total_steps": 8, "elapsed_s": elapsed, "samples_per_s": 0.0,
            "loss": None, "cost": rate * elapsed, "stages": []}, base_cost=0.0)
    Work.objects.filter(pk=job.work_id).update(status=Status.FAILED)
    return Job.objects.select_related("work").get(pk=job.pk), rate
