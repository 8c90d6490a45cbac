"""A drained run (a spot notice, or its budget): how it is recorded and what the job page
says of it.

The runtime drains a run on a spot notice (the coordinator's SIGTERM when the run holds the
worker's main thread, as in a Celery worker, or an agent's SIGTERM on its machine): every
stage checkpoints at one step and ends, and the launcher raises `RunPreempted`. The run is
recorded as failed (a restart resumes from the checkpoint, `services.RESUMABLE`), its error
is the runtime's sentence, and its summary holds only `preempted` (the step it stopped at,
the complete checkpoint, the reason), so the page can say "stopped by a spot notice at step
N, checkpoint complete" and offer "Resume from step N" (`services.resume`). The same record
goes on the run's work record as its result (a restart clears the job's summary, and the
cost itemisation, `interruptions`, reads every run's), and a job with automatic restarts
left is resumed by itself (`recovery`).
"""

from __future__ import annotations

from typing import Any

from heterps_core.runtime.errors import RunPreempted
from webapp.background.models import Status, Work
from webapp.jobs.models import Job
from webapp.jobs.records import finish_run

KEY = "preempted"
# The summary's `kind`: what drained the run. Only "spot" runs are for resuming by
# themselves; "budget" ones (the budget guard, `webapp.budgets.guard`, whose drain reasons
# begin "budget:") wait for a person to raise the budget (a start is refused until then).
SPOT, BUDGET = "spot", "budget"
BUDGET_REASON = "budget:"


def kind_of(reason: str) -> str:
    return BUDGET if reason.startswith(BUDGET_REASON) else SPOT


def record(job_id: int, run: int, exc: RunPreempted) -> None:
    """The run's summary and log line for a drained run."""
    stopped = {"step": exc.step, "checkpoint_step": exc.checkpoint_step,
               "reason": exc.reason, "kind": kind_of(exc.reason)}
    finish_run(job_id, {KEY: stopped}, f"run {run} {text(stopped)} ({exc.reason})")
    work_id = Job.objects.filter(pk=job_id).values_list("work_id", flat=True).first()
    if work_id is not None:  # kept past a restart, which clears the summary
        Work.objects.filter(pk=work_id).update(result={KEY: stopped})


def text(stopped: dict[str, Any]) -> str:
    """'stopped by a spot notice at step N, checkpoint complete' (or why none is); 'stopped
    by its budget ...' for the budget's drain."""
    saved = stopped.get("checkpoint_step")
    what = ("checkpoint complete" if saved == stopped["step"] else
            f"checkpoint complete at step {saved}" if saved else "no complete checkpoint")
    by = "its budget" if stopped.get("kind") == BUDGET else "a spot notice"
    return f"stopped by {by} at step {stopped['step']}, {what}"


def notice(job: Job) -> dict[str, Any] | None:
    """What the job page says of the latest run if a drain stopped it (None: not)."""
    stopped = (job.summary or {}).get(KEY)
    if not stopped or job.active or job.work is None or job.work.status != Status.FAILED:
        return None
    return {**stopped, "text": text(stopped)}
