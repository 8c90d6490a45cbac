"""A run's accrued cost per stage: units x price x the time held, split into start-up,
training busy/idle and stopping; a failed start is all start-up and says so."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background import services as work_services
from webapp.background.models import Status, Work
from webapp.costs.templatetags.money import usd
from webapp.jobs import accrual, services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def test_a_failed_start_is_all_start_up_per_stage_and_says_so(
    login: Any, personas: Any, failed_start: tuple[Job, float]
) -> None:
    job, rate = failed_start
    run = accrual.run_accrual(job, services.metrics_series(job))
    assert run is not None and not run["trained"]
    assert run["held_s"] == 2.0 and run["startup_s"] == 2.0 and run["span_s"] == 0.0
    assert run["accrued"] == pytest.approx(rate * 2.0)  # its real held time, every stage
    assert run["startup_usd"] == pytest.approx(run["accrued"])
    assert run["busy_usd"] == 0.0 and run["stopping_usd"] == 0.0
    units = [s["units"] for s in job.plan["stages"]]
    assert [r["units"] for r in run["rows"]] == units
    for r in run["rows"]:
        assert r["accrued"] == pytest.approx(r["units"] * r["price_per_hour"] * 2.0 / 3600)
    assert "split evenly over its units" in run["price_source"]  # a sample plan: no instance
    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="failed-start"' in page and "a failed start" in page
    assert f"all ${usd(run['accrued'])} of this run is start-up" in page


@pytest.mark.slow
def test_a_real_runs_stages_add_up_to_what_it_accrued(login: Any, personas: Any,
                                                      source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    run = accrual.run_accrual(job, services.metrics_series(job))
    assert run is not None and run["trained"]
    summary = job.summary
    assert run["held_s"] == pytest.approx(summary["elapsed_s"])
    assert run["startup_s"] == pytest.approx(summary["startup_s"])
    assert run["accrued"] == pytest.approx(summary["cost"], rel=1e-6)
    assert run["accrued"] == pytest.approx(
        run["startup_usd"] + run["busy_usd"] + run["idle_usd"] + run["stopping_usd"])
    for r, stage in zip(run["rows"], summary["stages"], strict=True):
        assert r["busy"] == pytest.approx(r["training"] * stage["busy_share"])
        assert r["busy"] > 0 and r["idle"] >= 0
    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="accrual-stages"' in page and 'id="failed-start"' not in page
    assert f"<th>{usd(run['accrued'])}</th>" in page


def test_a_run_that_failed_mid_way_is_split_from_its_samples(
    login: Any, personas: Any, source: Any
) -> None:
    """No summary (the run failed at step 6): start-up ends at the first sample past step 0
    and training at the last sample whose step moved, each within one report window."""
    job = services.approve(personas.member, source, RunOptions(steps=8))
    rate = job.predicted_cost_per_hour / 3600
    for elapsed, step in ((0.5, 0), (1.0, 0), (1.5, 2), (2.0, 4), (2.5, 6), (3.0, 6)):
        services.record_sample(job.pk, 1, {
            "step": step, "total_steps": 8, "elapsed_s": elapsed, "samples_per_s": 0.0,
            "loss": None, "cost": rate * elapsed, "stages": []}, base_cost=0.0)
    Work.objects.filter(pk=job.work_id).update(status=Status.FAILED)
    job = Job.objects.select_related("work").get(pk=job.pk)
    run = accrual.run_accrual(job, services.metrics_series(job))
    assert run is not None and run["trained"] and run["phases_approximate"]
    assert (run["startup_s"], run["span_s"], run["stopping_s"]) == (1.5, 1.0, 0.5)
    assert run["accrued"] == pytest.approx(rate * 3.0)
    assert run["startup_usd"] + run["stopping_usd"] + sum(
        r["training"] for r in run["rows"]) == pytest.approx(run["accrued"])
    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="failed-start"' not in page and "within one report window" in page
