"""A run that trained nothing (issue 25.9): a resumed run that failed while starting is
start-up in the cost split, never "slower than predicted", and the job's measured
throughput stays the earlier run's figure, said to be that run's, in the report and on
the job page."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background.models import Status, Work
from webapp.costs import services as costs
from webapp.jobs import records, services
from webapp.jobs.models import Job
from webapp.jobs.services import RUN_KIND, RunOptions

pytestmark = pytest.mark.django_db


def _sample(job: Job, run: int, step: int, elapsed: float, rate: float,
            run_per_s: float | None = None) -> None:
    # As the pipeline runner reports them: no run figure before two mini-batches finished.
    sample: dict[str, Any] = {
        "step": step, "total_steps": 8, "elapsed_s": elapsed,
        "samples_per_s": 50.0 if step else 0.0, "loss": 0.7 if step else None,
        "cost": rate * elapsed, "stages": [], "run_samples_per_s": run_per_s}
    records.record_sample(job.pk, run, sample, base_cost=0.0)


@pytest.fixture
def resumed_untrained(personas: Any, source: Any) -> tuple[Job, float]:
    """Run 1 trains steps 1-4 (measuring 100 samples/s at its end) and fails; run 2 resumes
    from step 4's checkpoint, holds its processes 2 s and fails before a mini-batch."""
    job = services.approve(personas.member, source, RunOptions(steps=8))
    rate = job.predicted_cost_per_hour / 3600
    for step, elapsed, per_s in ((0, 0.5, None), (2, 1.0, None), (4, 1.5, 90.0)):
        _sample(job, 1, step, elapsed, rate, per_s)
    records.finish_run(job.pk, {"throughput_definition": "first to last", "throughput": 100.0},
                       "run 1 finished")
    Work.objects.filter(pk=job.work_id).update(status=Status.FAILED)
    second = Work.objects.create(project=personas.project, kind=RUN_KIND,
                                 created_by=personas.member, status=Status.FAILED,
                                 params={"job": job.pk, "run": 2,
                                         "resume": {"run": 1, "step": 4}})
    Job.objects.filter(pk=job.pk).update(work=second, runs=2, last_step=4,
                                         last_throughput=None, summary=None)
    for elapsed in (0.5, 1.0, 1.5, 2.0):  # the restored step, never past it
        _sample(job, 2, 4, elapsed, rate)
    return Job.objects.select_related("work").get(pk=job.pk), rate


def test_a_resumed_run_that_trained_nothing_is_start_up_not_slower(
    personas: Any, resumed_untrained: tuple[Job, float]
) -> None:
    job, rate = resumed_untrained
    row = costs.report(personas.viewer, costs.month(None, today=job.created_at.date())).rows[0]
    asked = costs.estimated_run_cost(job)
    assert row.runs == 2 and row.untrained_runs == 1
    # Run 1: start-up to its first finished mini-batch (1.0 s), 4 of 8 steps trained.
    run1_slower = rate * 1.5 - rate * 1.0 - asked * 4 / 8
    assert row.startup == pytest.approx(rate * 1.0 + rate * 2.0)  # run 2 is all start-up
    assert row.slower == pytest.approx(run1_slower)  # nothing of run 2's
    assert row.stopped_early == pytest.approx((asked * 4 / 8 - asked) - asked)
    assert row.difference == pytest.approx(row.accrued - row.estimate)


def test_the_earlier_runs_measured_figure_is_shown_and_said_to_be_its(
    login: Any, personas: Any, resumed_untrained: tuple[Job, float]
) -> None:
    job, _ = resumed_untrained
    row = costs.report(personas.viewer, costs.month(None, today=job.created_at.date())).rows[0]
    # The final figure of run 1 (its summary's), not "-" and not a live window's.
    assert row.measured_throughput == pytest.approx(100.0) and row.measured_run == 1
    month = job.created_at.strftime("%Y-%m")
    page = login(personas.member).get(f"/costs/?month={month}").content.decode()
    assert "100.0<br><small>run 1; run 2 has trained nothing</small>" in page
    detail = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert "run 1 measured 100.0 samples/s; run 2 has trained nothing" in detail


def test_no_run_trained_shows_no_figure(personas: Any, failed_start: tuple[Job, float]) -> None:
    job, _ = failed_start
    row = costs.report(personas.viewer, costs.month(None, today=job.created_at.date())).rows[0]
    assert row.measured_throughput is None and row.measured_run is None


def test_the_job_list_shows_the_earlier_runs_figure(
    login: Any, personas: Any, resumed_untrained: tuple[Job, float]
) -> None:
    page = login(personas.viewer).get("/jobs/").content.decode()
    assert '<td data-field="throughput">100.0 <small>(run 1)</small></td>' in page
