"""The runner's side of budgets: every sample of a run is held against the job's budget and
its project's. Once one would be passed before the run could stop (`spend.Verdict`), the
guard asks the launcher to drain with the reason ("budget: job budget $X reached ($Y
spent)"): every stage checkpoints at one step and ends, and the run is recorded as stopped
by its budget (`jobs.preempted`, kind "budget"), never resumed by itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from heterps_core.runtime.liveness import DRAIN_LEAD_S, DRAIN_ROUNDS
from webapp.budgets import spend
from webapp.budgets.alerts import Notices
from webapp.jobs import records
from webapp.jobs.models import Job

if TYPE_CHECKING:
    from heterps_core.runtime.launcher import Launcher


class Guard:
    """Fed each stored sample (`sample`); `attach` hands it the launcher once there is one.
    `reason`: why it asked for the drain (None: it did not)."""

    def __init__(self, job: Job, run: int) -> None:
        self.job_id, self.run, self.batch_size = job.pk, run, job.batch_size
        self.drain: Callable[[str], None] | None = None
        self.lead_steps = 0  # a drain's least lead in steps: DRAIN_ROUNDS whole rounds
        self.reason: str | None = None
        self._notices = Notices(job.project_id, job.pk, job.created_by_id)

    def attach(self, launcher: Launcher) -> None:
        self.drain = launcher.request_drain
        self.lead_steps = DRAIN_ROUNDS * launcher.spec.round_steps

    def attach_stop(self, stop: Callable[[str], None]) -> None:
        """A runner without a launcher (data-parallel: no checkpoints, no drain step to
        agree) stops at once: no lead."""
        self.drain = stop

    def ahead_s(self, samples_per_s: float) -> float:
        """Seconds the run goes on after this sample if a drain is asked now (spend.AHEAD_S,
        with the lead of a job whose rounds take longer than DRAIN_LEAD_S)."""
        steps_per_s = samples_per_s / self.batch_size if self.batch_size else 0.0
        rounds_s = self.lead_steps / steps_per_s if steps_per_s > 0 else 0.0
        return spend.AHEAD_S + max(rounds_s - DRAIN_LEAD_S, 0.0)

    def sample(self, data: dict[str, Any]) -> None:
        ahead_s = self.ahead_s(float(data.get("samples_per_s") or 0.0))
        verdict = spend.verdict(self.job_id, float(data.get("cost_per_hour") or 0.0), ahead_s)
        reason = verdict.reason
        # At any step, even before the first mini-batch: the stages agree the drain's step
        # from their own progress (runtime/drain.py), so none is ever past it.
        if reason is not None and self.reason is None:
            self.reason = reason
            records.log(self.job_id, f"run {self.run}: {reason}: draining to a checkpoint")
            if self.drain is not None:
                self.drain(reason)
        self._notices.note(verdict, stopped=reason is not None)
