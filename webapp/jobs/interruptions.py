"""A job's runs itemised around spot notices (issue 26.5): saved by spot, lost to preemption,
restarts, and how many of each. The job page and the cost report show these figures.

Everything comes from what the runs recorded: each run's work record (its `resume` params:
the run and step it continued from; a drained run's result: `preempted`, written by
`preempted.record`) and its `JobMetric` rows (step, elapsed seconds, accrued $). Money is at
the rate the runtime accrues, the plan's $/hour for the time a run held its units.

- **saved by spot**: the same plan's units at their on-demand prices (the instance the plan
  was solved on) for the time the runs held them, minus what the runs accrued. Only for a
  plan with a spot stage; unknown (None) when the instance's prices are not here.
- **lost to preemption**: per run a spot notice stopped, the steps the next run trained
  again (it resumed from an earlier step than the stopped run reached; all of them when it
  started from 0) at the stopped run's measured seconds per step, plus the drain's tail
  (from its last finished mini-batch to its end: the final checkpoint and the stop).
- **restarts**: per run resumed after a spot notice, its start-up (held before its first
  mini-batch past its checkpoint finished; from its samples, so within one report window).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heterps_core.plan import Plan
from webapp.background.models import Work
from webapp.jobs import accrual, spot
from webapp.jobs.models import Job, JobMetric

RUN_KIND = "job-run"  # services.RUN_KIND (not imported: services imports the page helpers)
SPOT = "spot"

SOURCES = {
    "saved_by_spot": "on-demand prices of the plan's instance x the time the runs held their "
                     "units, minus the accrued $ (the runs' samples)",
    "lost_to_preemption": "steps the next run trained again x the stopped run's measured "
                          "seconds per step, plus its drain (last mini-batch to its end), at "
                          "the plan's $/hour (the runs' samples and work records)",
    "restarts": "each resumed run's held time before its first mini-batch, at the plan's "
                "$/hour (its samples: within one report window)",
}


@dataclass
class RunFacts:
    """One run as recorded: where it started, how far it got, what it held and accrued."""

    run: int
    start_step: int = 0  # the checkpoint it resumed from (0: from scratch)
    preempted: dict[str, Any] | None = None  # a spot notice's record (work result)
    rows: list[tuple[int, float, float]] = field(default_factory=list)  # step, elapsed, $

    @property
    def accrued(self) -> float:
        return max((cost for _, _, cost in self.rows), default=0.0)

    @property
    def held_s(self) -> float:
        return max((elapsed for _, elapsed, _ in self.rows), default=0.0)

    @property
    def last_step(self) -> int:
        return max((step for step, _, _ in self.rows), default=self.start_step)

    def trained(self) -> list[tuple[int, float]]:
        """(step, elapsed) of the samples past its start step, in order."""
        return [(step, elapsed) for step, elapsed, _ in self.rows if step > self.start_step]

    def startup_s(self) -> float:
        """Held before the first mini-batch past its start (all of it: none finished)."""
        trained = self.trained()
        return trained[0][1] if trained else self.held_s

    def seconds_per_step(self) -> float:
        trained = self.trained()
        if len(trained) >= 2 and trained[-1][0] > trained[0][0]:
            return (trained[-1][1] - trained[0][1]) / (trained[-1][0] - trained[0][0])
        steps = self.last_step - self.start_step
        return self.held_s / steps if steps > 0 else 0.0

    def tail_s(self) -> float:
        """From the first sample at its last step to its end (a drain: the checkpoint)."""
        at_last = [elapsed for step, elapsed in self.trained() if step == self.last_step]
        return max(self.held_s - at_last[0], 0.0) if at_last else 0.0


def runs_of(job: Job) -> dict[int, RunFacts]:
    """Every run of the job, from its work records and samples (two queries)."""
    return runs_of_many([job]).get(job.pk, {})


def runs_of_many(jobs: Sequence[Job]) -> dict[int, dict[int, RunFacts]]:
    """job id -> its runs, for a page of jobs in two queries (the cost report's rows: its
    query count must not grow with them). Samples are read only for the jobs there is
    something to itemise for: a spot stage, or a run a spot notice stopped."""
    facts: dict[int, dict[int, RunFacts]] = {job.pk: {} for job in jobs}
    works = Work.objects.filter(kind=RUN_KIND, project_id__in={j.project_id for j in jobs},
                                params__job__in=list(facts))
    for params, result in works.values_list("params", "result"):
        job_id, run = int(params.get("job") or 0), int(params.get("run") or 0)
        resume = params.get("resume") or {}
        stopped = (result or {}).get("preempted") if isinstance(result, dict) else None
        if stopped and stopped.get("kind", SPOT) != SPOT:
            stopped = None  # a budget stop is no preemption
        if job_id in facts:
            facts[job_id][run] = RunFacts(run, int(resume.get("step") or 0), stopped)
    itemised = [j.pk for j in jobs if spot.has_spot_stage(j.plan)
                or any(f.preempted for f in facts[j.pk].values())]
    rows = JobMetric.objects.filter(job_id__in=itemised).order_by(
        "job_id", "run", "elapsed_s").values_list("job_id", "run", "step", "elapsed_s", "cost")
    for job_id, run, step, elapsed, cost in rows:
        facts[job_id].setdefault(run, RunFacts(run)).rows.append((step, elapsed, cost))
    return facts


def on_demand_per_hour(job: Job, plan: Plan) -> float | None:
    """The plan's $/hour with every unit at its on-demand price (None: prices not here)."""
    prices, source = accrual.prices(job, plan)
    if not source.startswith("the prices of the instance"):
        return None
    stages = sum((s.units or 0) * prices.get(s.resource, 0.0) for s in plan.stages)
    server = plan.parameter_server.cost_per_hour if plan.parameter_server else 0.0
    return stages + server


def items(job: Job, runs: Iterable[int] | None = None,
          facts: dict[int, RunFacts] | None = None) -> dict[str, Any] | None:
    """The job's itemisation over `runs` (default: all), from `facts` (`runs_of_many`'s
    entry for the job; default: read here); None for a job with no spot stage that no spot
    notice stopped (nothing to itemise)."""
    facts = runs_of(job) if facts is None else facts
    chosen = sorted(facts if runs is None else set(runs) & set(facts))
    plan = Plan.from_dict(job.plan)
    has_spot = spot.has_spot_stage(job.plan)
    rate = job.predicted_cost_per_hour / 3600  # $ per second held, as the runtime accrues
    preemptions = lost_s = restart_s = 0.0
    restarts = redone = 0
    for run in chosen:
        fact = facts[run]
        if fact.preempted is not None:
            preemptions += 1
            after = facts.get(run + 1)
            again_from = after.start_step if after is not None else int(
                fact.preempted.get("checkpoint_step") or fact.start_step)
            steps = max(fact.last_step - again_from, 0)
            redone += steps
            lost_s += steps * fact.seconds_per_step() + fact.tail_s()
        before = facts.get(run - 1)
        if before is not None and before.preempted is not None and run > 1:
            restarts += 1
            restart_s += fact.startup_s()
    if not has_spot and not preemptions:
        return None
    held = sum(facts[run].held_s for run in chosen)
    accrued = sum(facts[run].accrued for run in chosen)
    on_demand = on_demand_per_hour(job, plan) if has_spot else None
    saved = None if on_demand is None else on_demand * held / 3600 - accrued
    return {
        "preemptions": int(preemptions), "restarts": restarts,
        "automatic_restarts": job.restarts, "max_restarts": job.max_restarts,
        "saved_by_spot": saved, "on_demand_per_hour": on_demand, "held_s": held,
        "lost_to_preemption": rate * lost_s, "lost_s": lost_s, "redone_steps": redone,
        "restart_cost": rate * restart_s, "restart_s": restart_s,
        "sources": SOURCES,
    }
