"""The cost report's per-job difference (start-up, slower than predicted, stopped early),
its status and labels: a failed start (stored samples of one) and a real tiny run."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.costs import services as costs
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _this_month(job: Job) -> costs.Period:
    return costs.month(None, today=job.created_at.date())


def test_a_failed_start_costs_its_held_time_and_says_so(
    login: Any, personas: Any, failed_start: tuple[Job, float]
) -> None:
    job, rate = failed_start
    row = costs.report(personas.viewer, _this_month(job)).rows[0]
    assert row.status == "failed" and row.untrained_runs == 1
    assert row.accrued == pytest.approx(rate * 2.0)
    assert row.startup == pytest.approx(row.accrued)  # all of it held while starting
    assert row.slower == pytest.approx(0.0)
    assert row.stopped_early == pytest.approx(-row.estimate)  # nothing asked was trained
    assert row.difference == pytest.approx(row.accrued - row.estimate)
    assert "tiny" in row.job and "1 run" in row.job
    page = login(personas.viewer).get("/costs/").content.decode()
    assert "held machines and trained no mini-batch: charged as start-up" in page
    assert 'start-up <span data-field="startup">' in page  # the difference's first part
    assert "Status <small>(latest run)</small>" in page
    exported = login(personas.viewer).get("/costs/export.csv").content.decode()
    assert "startup_usd" in exported.splitlines()[0] and ",failed," in exported


@pytest.mark.slow
def test_a_real_runs_difference_adds_up(personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    row = costs.report(personas.viewer, _this_month(job)).rows[0]
    assert row.status == "succeeded" and row.untrained_runs == 0
    assert row.startup == pytest.approx(
        job.predicted_cost_per_hour * job.summary["startup_s"] / 3600, rel=1e-6)
    assert 0 < row.startup < row.accrued
    assert row.stopped_early == pytest.approx(0.0, abs=1e-12)  # every step asked was trained
    assert row.startup + row.slower + row.stopped_early == pytest.approx(
        row.accrued - row.estimate)
    assert row.measured_throughput == pytest.approx(job.summary["throughput"])
