"""Leases and the sweeper, in process: a second delivery never runs a record twice, a dead
attempt is recovered (start over, or "failed: worker lost at step N"), cancel always
finishes, shutdown stops running work, and a queued record says where it waits.

The processes-killed-for-real versions are in tests/workers/test_faults.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from heterps_core.progress import Progress
from tests.waiting import wait_until
from webapp.background import leases, services, sweeper
from webapp.background.context import LeaseLost
from webapp.background.models import Status, Work

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))
import fault_kind  # registers the fault-test kinds

pytestmark = pytest.mark.django_db(transaction=True)


def _dead_owner() -> str:
    """The lease of a process on this host that has ended (a killed pool child)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return f"{leases.new_owner().split(':')[0]}:{proc.pid}:gone"


def _work(personas: Any, kind: str = "fault-steps", params: Any = None, **fields: Any) -> Work:
    params = fault_kind.FaultSteps().clean_params(params or {"steps": 3, "step_s": 0.01})
    return Work.objects.create(project=personas.project, kind=kind, params=params,
                               created_by=personas.member, **fields)


def _running(personas: Any, kind: str, owner: str, beat_age_s: float = 0.0,
             **fields: Any) -> Work:
    return _work(personas, kind, status=Status.RUNNING, attempt=1, lease_owner=owner,
                 heartbeat_at=timezone.now() - timedelta(seconds=beat_age_s),
                 started_at=timezone.now(), step=4, total_steps=10, **fields)


def test_a_second_delivery_of_a_live_lease_does_nothing(personas: Any) -> None:
    work = _running(personas, "fault-steps", "other-host:77:live")
    services.run_work(work.pk)
    again = Work.objects.get(pk=work.pk)
    assert (again.status, again.lease_owner, again.attempt) == (Status.RUNNING,
                                                                "other-host:77:live", 1)


def test_a_delivery_after_the_owner_died_fails_a_run_naming_its_step(personas: Any) -> None:
    work = _running(personas, "fault-steps", _dead_owner())
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.FAILED
    assert work.error.startswith("Worker lost at step 4 of 10 (last heartbeat ")


def test_a_delivery_after_the_owner_died_starts_a_retryable_kind_over(personas: Any) -> None:
    work = _running(personas, "fault-steps-retryable", _dead_owner())
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.SUCCEEDED
    assert work.attempt == 2 and work.result["attempt"] == 2


def test_attempts_are_capped(personas: Any, settings: Any) -> None:
    work = _running(personas, "fault-steps-retryable", _dead_owner())
    Work.objects.filter(pk=work.pk).update(attempt=settings.WORK_MAX_ATTEMPTS)
    services.run_work(work.pk)
    assert Work.objects.get(pk=work.pk).status == Status.FAILED


def test_the_sweeper_settles_stale_leases(personas: Any, settings: Any) -> None:
    stale = settings.WORK_LEASE_S + 5
    run = _running(personas, "fault-steps", "other-host:1:a", beat_age_s=stale)
    plan = _running(personas, "fault-steps-retryable", "other-host:1:b", beat_age_s=stale)
    cancelling = _running(personas, "fault-steps", "other-host:1:c", beat_age_s=stale)
    Work.objects.filter(pk=cancelling.pk).update(status=Status.CANCELLING)
    live = _running(personas, "fault-steps", "other-host:1:d")

    assert sweeper.sweep() == {"failed": 1, "requeued": 1, "cancelled": 1}
    states = dict(Work.objects.values_list("pk", "status"))
    assert states == {run.pk: Status.FAILED, plan.pk: Status.QUEUED,
                      cancelling.pk: Status.CANCELLED, live.pk: Status.RUNNING}
    assert "Worker lost at step 4 of 10" in Work.objects.get(pk=run.pk).error
    assert sweeper.sweep() == {}


def test_cancel_finishes_when_no_live_attempt_holds_the_record(personas: Any) -> None:
    work = _running(personas, "fault-steps", _dead_owner())
    services.cancel_work(personas.member, work)
    work.refresh_from_db()
    assert work.status == Status.CANCELLED
    assert work.message == "Cancelled; its worker had stopped at step 4 of 10."


def test_progress_from_an_attempt_that_lost_its_lease_is_refused(personas: Any) -> None:
    work = _running(personas, "fault-steps", "other-host:1:new")
    with pytest.raises(LeaseLost):
        services.report_progress(work.pk, Progress(9, 10, "late"), owner="other-host:1:old")
    assert Work.objects.get(pk=work.pk).step == 4


def test_a_cancel_reaches_a_kind_through_the_heartbeat(personas: Any, settings: Any) -> None:
    settings.WORK_HEARTBEAT_S = 0.05
    work = _work(personas, params={"steps": 1, "step_s": 30.0, "children": 0})
    runner = threading.Thread(target=services.run_work, args=(work.pk,))
    runner.start()
    wait_until(lambda: Work.objects.get(pk=work.pk).status == Status.RUNNING, 20, "the work to run")
    services.cancel_work(personas.member, Work.objects.get(pk=work.pk))
    start = time.monotonic()
    runner.join(10)
    assert time.monotonic() - start < 2  # not the 30 s step
    assert Work.objects.get(pk=work.pk).status == Status.CANCELLED


def test_shutdown_stops_running_work_and_its_processes(personas: Any) -> None:
    work = _work(personas, params={"steps": 100, "step_s": 0.05, "children": 2})
    runner = threading.Thread(target=services.run_work, args=(work.pk,))
    runner.start()
    wait_until(lambda: Work.objects.get(pk=work.pk).step >= 2, 20, "step 2")
    children = Work.objects.get(pk=work.pk).metrics["children"]
    start = time.monotonic()
    assert leases.stop_local() == 1
    runner.join(10)
    assert time.monotonic() - start < 10
    work.refresh_from_db()
    assert work.status == Status.FAILED
    assert work.error.startswith("Interrupted at step ") and "server shut down" in work.error
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()
                and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]]


def test_a_queued_record_says_where_it_waits(personas: Any) -> None:
    _running(personas, "fault-steps", "other-host:1:a", queue="long")
    first = _work(personas, queue="long")
    second = _work(personas, queue="long")
    interactive = _work(personas, "fault-steps-interactive", queue="interactive")
    assert services.state(second)["waiting"] == {
        "position": 2, "running": 1,
        "message": "Waiting in the long queue: #2 in line, behind 1 running (fault-steps)."}
    assert services.state(first)["waiting"]["position"] == 1
    assert services.state(interactive)["message"] == (
        "Waiting in the interactive queue: #1 in line, for a free worker.")


def _runtime_children() -> list[int]:
    """Live processes started from this one that run the runtime (stages, PS shards)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = next(int(x.split()[1]) for x in status.splitlines() if x.startswith("PPid:"))
        zombie = "State:\tZ" in status
        if ppid == os.getpid() and "heterps_core" in cmdline and not zombie:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_shutdown_stops_a_real_job_run_and_its_runtime_processes_within_10_s(
    personas: Any, source: Any
) -> None:
    from webapp.jobs import services as jobs
    from webapp.jobs.services import RunOptions

    job = jobs.approve(personas.member, source, RunOptions(steps=3000))
    runner = threading.Thread(target=services.run_work, args=(job.work_id,))
    runner.start()
    wait_until(lambda: Work.objects.get(pk=job.work_id).step >= 1, 180, "the run's first step")
    processes = _runtime_children()
    assert processes  # the stages run as processes of their own
    start = time.monotonic()
    assert leases.stop_local() == 1
    runner.join(30)
    stopped_s = time.monotonic() - start
    assert stopped_s < 10
    assert [pid for pid in processes if pid in _runtime_children()] == []
    work = Work.objects.get(pk=job.work_id)
    assert work.status == Status.FAILED
    assert work.error.startswith("Interrupted at step ") and "of 3000" in work.error


def test_a_heartbeat_stops_an_attempt_only_when_another_holds_the_lease(personas: Any) -> None:
    from webapp.background.context import StopReason, WorkContext

    work = _running(personas, "fault-steps", "other-host:1:new")
    stale = WorkContext(work_id=work.pk, project_id=personas.project.pk, user_id=None,
                        params={})
    leases.Heartbeat(stale, "other-host:1:old").beat()
    assert stale.stop_reason == StopReason.LEASE_LOST
    unseen = WorkContext(work_id=10**9, project_id=personas.project.pk, user_id=None,
                         params={})
    leases.Heartbeat(unseen, "other-host:1:old").beat()  # a row it cannot see
    assert not unseen.cancelled()


def test_a_job_run_lost_with_its_worker_fails_at_its_step_and_can_be_restarted(
    personas: Any, source: Any
) -> None:
    from webapp.jobs import services as jobs
    from webapp.jobs.models import Job
    from webapp.jobs.services import RunOptions

    job = jobs.approve(personas.member, source, RunOptions(steps=3000))
    Work.objects.filter(pk=job.work_id).update(
        status=Status.RUNNING, attempt=1, lease_owner=_dead_owner(), step=1335,
        total_steps=3000, heartbeat_at=timezone.now(), started_at=timezone.now())
    assert sweeper.sweep() == {"failed": 1}
    lost = Work.objects.get(pk=job.work_id)
    assert lost.error.startswith("Worker lost at step 1335 of 3000")
    again = jobs.restart(personas.member, Job.objects.get(pk=job.pk))
    assert again.runs == 2 and again.work_id != lost.pk
    assert again.work.status == Status.QUEUED and again.work.params["run"] == 2
