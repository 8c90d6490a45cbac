"""Approving a plan, the run options it is checked against, and a real runtime run."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from heterps_core.runtime import checkpoint
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import runners, services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db


def test_approving_records_the_options_the_prediction_and_queues_a_run(
    personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source,
                           RunOptions(steps=8, sync_mode="async", binding={"cpu-b": "cpu:2"}))
    assert (job.sync_mode, job.binding, job.steps, job.micro_batches) == (
        "async", {"cpu-b": "cpu:2"}, 8, 4)
    assert job.predicted_throughput == pytest.approx(source.plan["throughput"])
    assert job.predicted_cost_per_hour == pytest.approx(source.plan["cost_per_hour"])
    assert job.work is not None and job.work.kind == "job-run"
    assert job.work.params == {"job": job.pk, "run": 1}
    assert job.status == Status.QUEUED and job.runs == 1
    assert "approved by member" in job.log


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        (RunOptions(steps=8, sync_mode="gossip"), "sync_mode", "gossip"),
        (RunOptions(steps=8, binding={"gpu-x": "cpu"}), "binding", "gpu-x"),
        (RunOptions(steps=8, binding={"cpu": "tpu:1"}), "binding", "tpu"),
        (RunOptions(steps=0), "steps", "1.."),
        (RunOptions(steps=8, micro_batches=500), "micro_batches", "batch size"),
    ],
)
def test_bad_run_options_name_the_field(
    personas: Any, source: Any, options: RunOptions, field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        services.approve(personas.member, source, options)
    problems = caught.value.message_dict
    assert field in {name.split(".")[0] for name in problems}, problems
    assert words in " ".join(" ".join(v) for v in problems.values())
    assert not Job.objects.exists()


def test_a_plan_for_another_model_is_refused(personas: Any, source: Any) -> None:
    from dataclasses import replace

    with pytest.raises(ValidationError) as caught:
        services.approve(personas.member, replace(source, model_name="deepfm"),
                         RunOptions(steps=8))
    assert "plan" in caught.value.message_dict


def test_viewers_may_not_approve_and_outsiders_learn_nothing(personas: Any, source: Any) -> None:
    with pytest.raises(PermissionDenied):
        services.approve(personas.viewer, source, RunOptions(steps=8))
    with pytest.raises(Http404):
        services.approve(personas.outsider, source, RunOptions(steps=8))


def test_a_running_job_cannot_be_restarted(personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    with pytest.raises(ValidationError, match="still queued"):
        services.restart(personas.member, job)
    services.cancel(personas.member, job)
    job = services.restart(personas.member, Job.objects.get(pk=job.pk))
    assert job.runs == 2 and job.work.params["run"] == 2


@pytest.mark.slow
def test_a_real_runtime_run_stores_its_metrics_summary_and_cost(
    personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    # An earlier run that was cancelled after accruing $0.01: the next run adds to it.
    services.record_sample(job.pk, 1, {"step": 2, "total_steps": 8, "elapsed_s": 3.0,
                                       "samples_per_s": 50.0, "loss": 0.7, "cost": 0.01,
                                       "stages": []}, base_cost=0.0)
    services.cancel(personas.member, job)
    job = services.restart(personas.member, Job.objects.get(pk=job.pk))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    metrics = list(JobMetric.objects.filter(job=job, run=2).order_by("elapsed_s"))
    assert metrics and metrics[-1].step == 8 and metrics[-1].total_steps == 8
    assert [s["resource"] for s in metrics[-1].stages] == ["cpu", "cpu-b"]
    assert job.summary["steps"] == 8 and job.summary["throughput"] > 0
    assert metrics[-1].cost > 0
    assert job.accrued_cost == pytest.approx(0.01 + metrics[-1].cost)
    assert job.last_step == 8 and job.last_loss is not None
    assert "run 2 finished" in job.log
    # Web runs checkpoint by default, under the run's log folder (every tenth: 1 step here).
    assert job.summary["checkpoint_step"] == 8
    folder = runners.pipeline.log_dir(job, 2) / "checkpoints"
    assert checkpoint.complete_steps(folder, 3) == [7, 8]  # the newest two are kept


def test_a_job_of_a_database_made_afresh_gets_its_own_run_folder(settings: Any) -> None:
    """Job ids start from 1 again in a new database; an old job 1's checkpoints would make the
    runtime refuse the new job 1 ("holds checkpoints of another job")."""
    import datetime as dt

    earlier = Job(pk=1, created_at=dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC))
    later = Job(pk=1, created_at=dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC))
    assert runners.pipeline.log_dir(earlier, 1) != runners.pipeline.log_dir(later, 1)
    assert runners.pipeline.checkpoint_dir(later, 2).parent == runners.pipeline.log_dir(later, 2)
