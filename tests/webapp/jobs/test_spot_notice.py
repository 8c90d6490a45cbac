"""A web job stopped by a spot notice (issue 23): a real SIGTERM reaches the coordinator while
its run trains (the launcher drains every stage to a final checkpoint); the job page says so
and a member resumes it with one click from that checkpoint; a viewer's click is refused."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from heterps_core.runtime import checkpoint
from heterps_core.runtime.compile import compile_run
from tests.waiting import wait_until
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.runners import pipeline
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db(transaction=True)

# Far more than the drain needs: the notice must land while the run trains (the drain step
# is a few seconds ahead of the last finished mini-batch).
STEPS = 2000


def _drained_by_sigterm(job: Job) -> None:
    """Run the job's run here (the main thread: the launcher's SIGTERM handler is installed
    only there, as in a Celery worker) and send this process SIGTERM once it trains."""
    def notice() -> None:
        wait_until(lambda: JobMetric.objects.filter(job_id=job.pk, step__gte=4).exists(), 180,
                   "the run training")
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=notice)
    sender.start()
    try:
        work_services.run_work(job.work_id)
    finally:
        sender.join(200)


def _page(login: Any, user: Any, job: Job) -> str:
    return str(login(user).get(f"/jobs/{job.pk}/").content.decode())


@pytest.mark.slow
def test_a_spot_notice_is_shown_and_a_member_resumes_from_its_checkpoint(
    login: Any, personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=STEPS))
    _drained_by_sigterm(job)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED, job.work.error
    stopped = job.summary["preempted"]
    step, saved = stopped["step"], stopped["checkpoint_step"]
    assert 4 < step < STEPS and saved == step
    world = compile_run(pipeline.run_config(job)).world_size
    assert saved in checkpoint.complete_steps(pipeline.checkpoint_dir(job, 1), world)
    assert f"run 1 stopped by a spot notice at step {step}, checkpoint complete" in job.log

    page = _page(login, personas.member, job)
    assert f"Stopped by a spot notice at step {step}, checkpoint complete" in page
    assert 'id="resume-button"' in page and f"Resume from step {saved}</button>" in page
    # A viewer reads the notice, has no button, and a POST of it changes nothing.
    seen = _page(login, personas.viewer, job)
    assert f"Stopped by a spot notice at step {step}" in seen
    assert 'id="resume-button"' not in seen
    viewer_post = login(personas.viewer).post(f"/jobs/{job.pk}/restart/",
                                             {"resume_step": saved})
    assert viewer_post.status_code == 403
    assert login(personas.outsider).post(f"/jobs/{job.pk}/restart/",
                                         {"resume_step": saved}).status_code == 404
    assert Job.objects.get(pk=job.pk).runs == 1

    # The member's one click: run 2, from the drained checkpoint, to the end.
    response = login(personas.member).post(f"/jobs/{job.pk}/restart/", {"resume_step": saved})
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.runs == 2
    assert job.work.params == {"job": job.pk, "run": 2, "resume": {"run": 1, "step": saved}}
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    assert job.summary["start_step"] == saved and job.summary["steps"] == STEPS
    steps = list(JobMetric.objects.filter(job=job, run=2).values_list("step", flat=True))
    assert steps and min(steps) >= saved and max(steps) == STEPS  # from the checkpoint on
    assert f"run 2 resumes from step {saved} of run 1's checkpoint" in job.log
    assert "Stopped by a spot notice" not in _page(login, personas.member, job)


def test_a_resume_click_for_a_checkpoint_that_is_gone_starts_nothing(
    login: Any, personas: Any, source: Any
) -> None:
    # A stale page: its button names step 60, and the job has no checkpoint to resume from.
    job = services.approve(personas.member, source, RunOptions(steps=8))
    services.cancel(personas.member, job)
    response = login(personas.member).post(f"/jobs/{job.pk}/restart/", {"resume_step": "60"})
    assert response.status_code == 302
    job = Job.objects.get(pk=job.pk)
    assert job.runs == 1  # nothing started from step 0 in its place
    followed = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert "step 60&#x27;s checkpoint is not the one to resume from" in followed or \
        "step 60's checkpoint is not the one to resume from" in followed
    bad = login(personas.member).post(f"/jobs/{job.pk}/restart/", {"resume_step": "soon"})
    assert bad.status_code == 302 and Job.objects.get(pk=job.pk).runs == 1
