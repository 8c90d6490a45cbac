"""Measured vs predicted, like with like, on a real (tiny, CPU) run whose GPU type ran on
this CPU: the one measured throughput everywhere, stage shares, the substitute banner and
the prediction for what ran."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import samples, services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db
GPU_PLAN = ["cpu", "gpu-t4", "gpu-t4", "gpu-t4"]


@pytest.fixture
def gpu_job(personas: Any, source: Any) -> Job:
    gpu = replace(source, plan=samples.ctr_plan(GPU_PLAN))
    job = services.approve(personas.member, gpu, RunOptions(steps=16, binding={"gpu-t4": "cpu"}))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work", "project").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    return job


@pytest.mark.slow
def test_one_measured_throughput_and_like_with_like(login: Any, personas: Any,
                                                    gpu_job: Job, zoo_model: Any) -> None:
    job, summary = gpu_job, gpu_job.summary
    # The definition: samples of the mini-batches after the first, over their span.
    assert summary["samples_in_span"] == 15 * job.batch_size
    assert summary["throughput"] == pytest.approx(summary["samples_in_span"] / summary["span_s"])
    assert summary["startup_s"] > 0
    # The tile, the list, the API and the CLI's source all hold that one figure.
    assert job.last_throughput == pytest.approx(summary["throughput"])
    last = JobMetric.objects.filter(job=job, run=1).order_by("-elapsed_s").first()
    assert last is not None and last.stages[0]["busy_share"] > 0
    for stage in summary["stages"]:
        assert 0 < stage["busy_share"] <= 1 and stage["measured_time_per_batch_s"] > 0
    # A sample plan says nothing of where its figures come from: no stage is claimed as
    # measured on the hardware it ran on, whatever its type's name.
    assert [s["substitute"] for s in summary["stages"]] == [True, True]
    items = summary["cost_items"]
    assert sum(items.values()) == pytest.approx(summary["cost"])
    assert items["startup_usd"] == pytest.approx(
        job.predicted_cost_per_hour * summary["startup_s"] / 3600)

    client = login(personas.viewer)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Ran on a substitute: stage 1 (cpu) ran on cpu; stage 2 (gpu-t4) ran on cpu" in page
    assert "for the planned hardware, which did not run" in page
    assert "Throughput, predicted for what ran" in page
    assert "Prediction error (vs predicted for what ran)" in page
    shown = f"{summary['predicted_throughput_as_run']:.1f}"
    assert shown in page and f"{summary['throughput']:.1f}" in page
    assert "Measured (ms per mini-batch)" in page and "(substitute)" in page
    assert "= start-up $" in page and "s of it start-up" in page
    # Every stage ran on a substitute: none is flagged against a prediction for other hardware.
    assert "Measured differs from the plan's prediction by more than 15%" not in page
    listed = client.get("/jobs/").content.decode()
    assert f"{summary['throughput']:.1f}" in listed
    api = client.get(f"/api/jobs/{job.pk}/").json()
    assert api["last_throughput"] == pytest.approx(summary["throughput"])

    # The model page: each layer group's measured time next to the plan's, with provenance.
    model_page = client.get(f"/models/{zoo_model.pk}/").content.decode()
    assert f"measured in job {job.pk}, run 1" in model_page
    assert "not comparable (ran on a substitute)" in model_page
    measured_ms = f"{summary['stages'][0]['measured_time_per_batch_s'] * 1000:.3f}"
    assert measured_ms in model_page

    # A restart shows nothing of the last run until its own first step.
    services.restart(personas.member, job)
    again = Job.objects.get(pk=job.pk)
    assert again.last_loss is None and again.last_throughput is None and again.summary is None
