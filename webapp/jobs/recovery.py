"""Managed recovery (issue 26.5): a web job that a spot notice stopped resumes by itself.

A run drained by a spot notice is recorded failed with `summary["preempted"]` (`preempted`).
Such a job is resumed automatically - a new run of the same job, from its checkpoint, through
`services.start_run` like every other run - once its resource types have capacity again, at
most `Job.max_restarts` times over the job's life (counted in `Job.restarts`). Types bound to
this machine (`cpu`, `cuda:N`) always have it; a `remote` type has it while some worker
consumes its agent queue (`broker.serving`, the check approving makes). Without capacity
nothing is started and the next sweep asks again: `sweep` runs in the background sweeper
(`background/sweeper.py`, every WORK_SWEEP_S), which the jobs app joins when it loads.

Never resumed by itself: a run stopped by its budget (`kind` "budget" in the preempted
summary, the budget guard's stop), cancelled, failed for any other reason, or a job whose
restarts are used up; those keep the page's "Resume by hand".
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from webapp.background import broker
from webapp.background.models import Status
from webapp.jobs import preempted, services, spot
from webapp.jobs.models import Job
from webapp.projects.permissions import Action, AnyUser, PermissionDenied, check

log = logging.getLogger(__name__)

SPOT_KIND = "spot"  # a preempted summary's `kind` (the budget guard's stops say "budget")
REFUSED = "recovery_refused"  # on the preempted summary: why a restart was refused


def set_max_restarts(user: AnyUser, job: Job, value: Any) -> Job:
    """Change how many automatic restarts the job may use (members and owners)."""
    check(user, job.project_id, Action.EDIT)
    wanted = spot.clean_max_restarts(value)
    Job.objects.filter(pk=job.pk).update(max_restarts=wanted)
    services.log(job.pk, f"automatic restarts after spot notices set to {wanted} by "
                         f"{user.get_username()} ({job.restarts} used)")
    return Job.objects.select_related("work", "project").get(pk=job.pk)


def spot_stop(job: Job) -> dict[str, Any] | None:
    """The preempted summary of the job's latest run if a spot notice stopped it (not its
    budget, not a cancel or an error), else None."""
    stopped = (job.summary or {}).get(preempted.KEY)
    if not stopped or job.work is None or job.work.status != Status.FAILED:
        return None
    return stopped if stopped.get("kind", SPOT_KIND) == SPOT_KIND else None


def remote_types(job: Job) -> list[str]:
    """The job's types bound to `remote` (run by agents on other machines)."""
    return sorted(name for name, target in job.binding.items()
                  if str(target).startswith("remote"))


def missing_capacity(job: Job) -> list[str]:
    """The job's types that have no capacity now: `remote` ones no worker serves."""
    remote = remote_types(job)
    if not remote:
        return []
    if settings.MODE.embedded_worker:  # no agent can join an in-process broker
        return remote
    serving = broker.serving(remote)
    return [name for name in remote if name not in serving]


def status(job: Job) -> dict[str, Any] | None:
    """What the job page says of recovery after a spot notice (None: no spot stop)."""
    stopped = spot_stop(job)
    if stopped is None:
        return None
    used, most = job.restarts, job.max_restarts
    if not most and not used:  # recovery off: the notice's own "Resume from step N"
        return None
    if stopped.get(REFUSED):
        return {"pending": False, "text": (f"spot notice at step {stopped['step']}; not "
                                           f"resumed automatically: {stopped[REFUSED]}; "
                                           "Resume by hand")}
    if used >= most:
        return {"pending": False, "text": (
            f"spot notice at step {stopped['step']}; {used} of {most} automatic restart"
            f"{'s' if most != 1 else ''} used; Resume by hand")}
    remote = remote_types(job)
    waits = (f"once agents of {', '.join(remote)} are connected" if remote
             else "at the next sweep (its types run on this machine)")
    return {"pending": True, "text": (f"resumes by itself {waits}: automatic restart "
                                      f"{used + 1} of {most}")}


def recover(job_id: int) -> str:
    """Resume the job if a spot notice stopped it and a restart is left. Returns what it did:
    "resumed", "waiting" (no capacity), "exhausted", "refused" (the approver may not start
    runs any more) or "" (nothing to recover)."""
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("work").filter(
            pk=job_id).first()
        if job is None or job.active or spot_stop(job) is None:
            return ""
        if job.restarts >= job.max_restarts:
            return "exhausted"
        if missing_capacity(job):
            return "waiting"
        stopped = spot_stop(job) or {}
        if stopped.get(REFUSED):  # said once; a person resumes it (a new run clears it)
            return "refused"
        if job.created_by is None:  # its approver's account is gone: nobody to act as
            _refuse(job, stopped, "its approver's account is gone")
            return "refused"
        try:
            started = services.start_run(job.created_by, job, resume=True)
        except (PermissionDenied, ValidationError) as exc:
            _refuse(job, stopped, _why(exc))
            return "refused"
        Job.objects.filter(pk=job_id).update(restarts=F("restarts") + 1)
        services.log(job_id, f"run {started.runs} started automatically after the spot "
                             f"notice at step {stopped.get('step')}: restart "
                             f"{job.restarts + 1} of {job.max_restarts}")
    return "resumed"


def _why(exc: PermissionDenied | ValidationError) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return f"its approver may no longer start runs ({exc})"


def _refuse(job: Job, stopped: dict[str, Any], why: str) -> None:
    """Record once, on the stop itself, why the job is not resumed by itself: the sweep asks
    every few seconds, and would otherwise try (and log) again each time."""
    summary = dict(job.summary or {})
    summary[preempted.KEY] = {**stopped, REFUSED: why}
    Job.objects.filter(pk=job.pk).update(summary=summary)
    log.warning("job %s not resumed automatically: %s", job.pk, why)
    services.log(job.pk, f"not resumed automatically after the spot notice at step "
                         f"{stopped.get('step')}: {why}; Resume by hand")


def candidates() -> list[int]:
    """Jobs whose latest run was drained and failed, with restarts left (the drain's kind
    is checked per job: `spot_stop`)."""
    return list(Job.objects.filter(work__status=Status.FAILED, restarts__lt=F("max_restarts"),
                                   summary__has_key=preempted.KEY)
                .values_list("pk", flat=True))


def sweep() -> dict[str, int]:
    """One pass over the jobs a spot notice stopped (the background sweeper's hook)."""
    done: dict[str, int] = {}
    for job_id in candidates():
        outcome = recover(job_id)
        if outcome in ("resumed", "waiting", "refused"):
            key = f"jobs {outcome}"
            done[key] = done.get(key, 0) + 1
    return done
