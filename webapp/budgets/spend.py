"""Where a job's and its project's budgets stand, and the one rule that both the runner's
guard and a start apply: a budget counts as reached once what is accrued, plus what the
run would accrue before the next sample and a drain's lead, meets it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Sum

from heterps_core.runtime.liveness import DRAIN_LEAD_S
from webapp.jobs.models import Job

# What a run accrues before it can stop counts as spent already: until the next sample
# (the report interval, 0.5 s), the drain's lead (every stage must learn the stop step
# before it gets there: DRAIN_LEAD_S, or DRAIN_ROUNDS whole rounds of a slow job, which the
# guard works out from the run's speed), then the last checkpoint's write and the processes'
# end (measured 1-1.5 s on an idle machine, 2 s and more on a loaded one).
SAMPLE_S, STOP_S = 0.5, 3.0
AHEAD_S = SAMPLE_S + DRAIN_LEAD_S + STOP_S
JOB, PROJECT = "job", "project"


@dataclass(frozen=True)
class Standing:
    """One budget: dollars (None: no budget) and dollars accrued against it."""

    budget: float | None
    spent: float

    @property
    def percent(self) -> float | None:
        return None if not self.budget else 100.0 * self.spent / self.budget

    def reached(self, ahead: float) -> bool:
        return self.budget is not None and self.spent + ahead >= self.budget


@dataclass(frozen=True)
class Verdict:
    """A job's budget and its project's, and the first of them it reaches (None: neither)."""

    job: Standing
    project: Standing
    ahead: float  # dollars the run accrues before it can stop

    @property
    def scope(self) -> str | None:
        if self.job.reached(self.ahead):
            return JOB
        return PROJECT if self.project.reached(self.ahead) else None

    @property
    def reason(self) -> str | None:
        """The drain's reason, 'budget: job budget $X reached ($Y spent)'."""
        scope = self.scope
        if scope is None:
            return None
        standing = self.job if scope == JOB else self.project
        return (f"budget: {scope} budget ${standing.budget:.2f} reached "
                f"(${standing.spent:.4f} spent{' by its jobs' if scope == PROJECT else ''})")


def project_spent(project_id: int) -> float:
    """Dollars accrued by every run of every job of the project."""
    total = Job.objects.filter(project_id=project_id).aggregate(total=Sum("accrued_cost"))
    return float(total["total"] or 0.0)


def verdict(job_id: int, cost_per_hour: float, ahead_s: float = AHEAD_S) -> Verdict:
    """The job's budgets as the database has them now (budgets may change during a run);
    `cost_per_hour`: what the run costs while it runs; `ahead_s`: until it could stop."""
    row = Job.objects.filter(pk=job_id).values(
        "accrued_cost", "budget", "project_id", "project__budget").get()
    project_budget = row["project__budget"]
    spent = project_spent(row["project_id"]) if project_budget is not None else 0.0
    return Verdict(job=Standing(row["budget"], float(row["accrued_cost"])),
                   project=Standing(project_budget, spent),
                   ahead=max(cost_per_hour, 0.0) * ahead_s / 3600)


def job_standing(job: Job) -> Standing:
    return Standing(job.budget, job.accrued_cost)


def project_standing(project_id: int, budget: float | None) -> Standing:
    return Standing(budget, project_spent(project_id))
