"""A restart resumes from the checkpoint the run before it left: real runtime processes of the
tiny CTR-DNN, stopped for real (a cancel, a server shutdown) after a checkpoint."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db.models import Max

from heterps_core.runtime import checkpoint
from heterps_core.runtime.compile import compile_run
from tests.waiting import wait_until
from webapp.background import leases
from webapp.background import services as work_services
from webapp.background.models import Status, Work
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.runners import pipeline
from webapp.jobs.services import RunOptions
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 600  # long enough to stop after the first checkpoint (every 60), short to finish


@pytest.fixture(autouse=True)
def quick_heartbeat(settings: Any) -> None:
    settings.WORK_HEARTBEAT_S = 0.05  # a cancel reaches the run within a beat


def _world_size(job: Job) -> int:
    return compile_run(pipeline.run_config(job)).world_size


def _stopped_after_a_checkpoint(job: Job, stop: Callable[[], Any]) -> int:
    """Run the job's current run in a worker thread, stop it once a checkpoint is complete;
    returns the newest complete checkpoint it left."""
    folder = pipeline.checkpoint_dir(job, job.runs)
    world = _world_size(job)
    runner = threading.Thread(target=work_services.run_work, args=(job.work_id,))
    runner.start()
    try:
        wait_until(lambda: checkpoint.complete_steps(folder, world), 180, "a complete checkpoint")
        stop()
    finally:
        runner.join(60)
    assert not runner.is_alive()
    steps = checkpoint.complete_steps(folder, world)
    assert steps and steps[-1] < STEPS, steps  # stopped mid-run
    return steps[-1]


def _page(login: Any, user: Any, job: Job) -> str:
    return str(login(user).get(f"/jobs/{job.pk}/").content.decode())


@pytest.mark.slow
def test_a_cancelled_run_restarts_from_its_checkpoint_and_finishes(
    login: Any, personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=STEPS))
    saved = _stopped_after_a_checkpoint(
        job, lambda: services.cancel(personas.member, Job.objects.get(pk=job.pk)))
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.CANCELLED
    first_cost = JobMetric.objects.filter(job=job, run=1).aggregate(c=Max("cost"))["c"]
    assert first_cost > 0
    assert f"Restart from step {saved}</button>" in _page(login, personas.member, job)

    job = services.restart(personas.member, job)
    assert job.work.params == {"job": job.pk, "run": 2, "resume": {"run": 1, "step": saved}}
    assert job.last_step == saved
    assert f"run 2 resumes from step {saved} of run 1's checkpoint" in job.log
    work_services.run_work(job.work_id)

    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    steps = list(JobMetric.objects.filter(job=job, run=2).order_by("elapsed_s")
                 .values_list("step", flat=True))
    assert steps and min(steps) >= saved and steps[-1] == STEPS  # from the checkpoint on
    assert max(steps) > saved
    assert job.summary["start_step"] == saved and job.summary["steps"] == STEPS
    assert f"starting 3 processes at step {saved}" in job.log
    # Earlier runs' cost counted once, this run's added to it.
    second_cost = JobMetric.objects.filter(job=job, run=2).aggregate(c=Max("cost"))["c"]
    assert job.accrued_cost == pytest.approx(first_cost + second_cost)
    # Run 2's folder is whole by itself; run 1's checkpoint is untouched.
    world = _world_size(job)
    assert checkpoint.complete_steps(pipeline.checkpoint_dir(job, 2), world)[-1] == STEPS
    assert saved in checkpoint.complete_steps(pipeline.checkpoint_dir(job, 1), world)

    # After a run that finished, a restart trains anew.
    assert "Restart from step 0</button>" in _page(login, personas.member, job)
    job = services.restart(personas.member, job)
    assert "resume" not in job.work.params and job.last_step == 0
    assert "run 2 succeeded: starting from step 0" in job.log


@pytest.mark.slow
def test_a_run_stopped_by_a_shutdown_resumes_and_a_refused_checkpoint_says_why(
    personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=STEPS))
    saved = _stopped_after_a_checkpoint(job, leases.stop_local)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED and "server shut down" in job.work.error
    assert services.resume_point(job) is not None and services.resume_point(job).step == saved

    # The job's settings no longer match the checkpoint (as after an edit of its options):
    # the runtime refuses it, and the record names the setting and what a restart does next.
    options = {**job.options, "micro_batches": 2}
    Job.objects.filter(pk=job.pk).update(options=options)
    job = services.restart(personas.member, Job.objects.get(pk=job.pk))
    assert job.work.params["resume"] == {"run": 1, "step": saved}
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED
    error = job.work.error
    assert f"run 2 cannot resume from step {saved} of run 1's checkpoint" in error, error
    assert "checkpoint.micro_batches" in error and "Restart again to start from step 0" in error
    assert error in job.log
    assert not JobMetric.objects.filter(job=job, run=2).exists()

    # The refused copy is gone (run 1's stays): the next restart starts from step 0.
    assert not checkpoint.complete_steps(pipeline.checkpoint_dir(job, 2), _world_size(job))
    assert checkpoint.complete_steps(pipeline.checkpoint_dir(job, 1), 3)
    job = services.restart(personas.member, job)
    assert "resume" not in job.work.params
    assert "no complete checkpoint: starting from step 0" in job.log


def test_a_run_lost_before_any_checkpoint_restarts_from_step_0(personas: Any,
                                                              source: Any) -> None:
    from webapp.background import sweeper

    job = services.approve(personas.member, source, RunOptions(steps=STEPS))
    Work.objects.filter(pk=job.work_id).update(
        status=Status.RUNNING, attempt=1, lease_owner="gone-host:1:x", step=12,
        total_steps=STEPS, started_at=None, heartbeat_at=None)
    assert sweeper.sweep() == {"failed": 1}
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.error.startswith("Worker lost at step 12")
    assert services.resume_point(job) is None
    job = services.restart(personas.member, job)
    assert job.runs == 2 and "resume" not in job.work.params
    assert "no complete checkpoint: starting from step 0" in job.log


def test_viewers_and_outsiders_cannot_restart(login: Any, personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    services.cancel(personas.member, job)
    job = Job.objects.select_related("work").get(pk=job.pk)
    with pytest.raises(PermissionDenied):
        services.restart(personas.viewer, job)
    assert login(personas.viewer).post(f"/jobs/{job.pk}/restart/").status_code == 403
    assert login(personas.outsider).post(f"/jobs/{job.pk}/restart/").status_code == 404
    assert login(personas.viewer).post(f"/api/jobs/{job.pk}/restart/").status_code == 403
    assert "Restart from step" not in _page(login, personas.viewer, job)
    assert Job.objects.get(pk=job.pk).runs == 1


def test_a_resume_param_must_name_an_earlier_run_of_the_job(personas: Any, source: Any) -> None:
    from django.core.exceptions import ValidationError

    job = services.approve(personas.member, source, RunOptions(steps=8), start=False)
    for bad in ({"run": 2, "step": 4}, {"run": 0, "step": 4}, {"run": 1, "step": "4"}, [1, 4]):
        with pytest.raises(ValidationError, match="resume"):
            work_services.start_work(personas.member, personas.project, services.RUN_KIND,
                                     {"job": job.pk, "run": 2, "resume": bad}, by_owner=True)
