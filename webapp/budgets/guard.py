"""The runner's side of budgets: every sample of a run is held against the job's budget and
its project's. Once one would be passed before the run could stop (`spend.Verdict`), the
guard asks the launcher to drain with the reason ("budget: job budget $X reached ($Y
spent)"): every stage checkpoints at one step and ends, and the run is recorded as stopped
by its budget (`jobs.preempted`, kind "budget"), never resumed by itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webapp.budgets import spend
from webapp.budgets.alerts import Notices
from webapp.jobs import records
from webapp.jobs.models import Job


class Guard:
    """Fed each stored sample (`sample`); `drain` is the launcher's `request_drain`, set once
    the launcher exists. `reason`: why it asked for the drain (None: it did not)."""

    def __init__(self, job: Job, run: int) -> None:
        self.job_id, self.run = job.pk, run
        self.drain: Callable[[str], None] | None = None
        self.reason: str | None = None
        self._notices = Notices(job.project_id, job.pk, job.created_by_id)

    def sample(self, data: dict[str, Any]) -> None:
        verdict = spend.verdict(self.job_id, float(data.get("cost_per_hour") or 0.0))
        reason = verdict.reason
        if reason is not None and self.reason is None:
            self.reason = reason
            records.log(self.job_id, f"run {self.run}: {reason}: draining to a checkpoint")
            if self.drain is not None:
                self.drain(reason)
        self._notices.note(verdict, stopped=reason is not None)
