"""`brute`: every assignment, scored by the cost model; the ground truth for small instances.

With cost caps (`caps`, a planning request's `--max-hourly-cost` / `--max-total-cost`) only
the plans that meet them compete."""

from __future__ import annotations

import itertools

from heterps_core.costmodels.caps import NO_CAPS, CostCaps
from heterps_core.costmodels.common import infeasible_plan
from heterps_core.errors import SchedulerError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.scoring import AssignmentScorer, Score, better

MAX_ASSIGNMENTS = 2_000_000


def assignment_count(instance: Instance) -> int:
    return len(instance.resources) ** len(instance.layers)


@register
class BruteScheduler(Scheduler):
    name = "brute"
    summary = f"Tries all R^L assignments (refuses beyond {MAX_ASSIGNMENTS:,})."
    honours_caps = True

    @classmethod
    def refusal(cls, instance: Instance) -> str | None:
        count = assignment_count(instance)
        if count > MAX_ASSIGNMENTS:
            return (
                f"brute force would try {len(instance.resources)}^{len(instance.layers)} = "
                f"{count:.3g} assignments; the limit is {MAX_ASSIGNMENTS:,}"
            )
        return None

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        refusal = self.refusal(instance)
        if refusal:
            raise SchedulerError(refusal)
        return enumerate_plans(instance, self.caps, self.name, progress)


def enumerate_plans(instance: Instance, caps: CostCaps = NO_CAPS, scheduler: str = "brute",
                    progress: ProgressCallback | None = None) -> Plan:
    """The best plan over every assignment (that meets `caps`), or why there is none."""
    scorer = AssignmentScorer(instance)
    total = assignment_count(instance)
    best: tuple[str, ...] | None = None
    best_score: Score | None = None
    cheapest: tuple[str, ...] | None = None  # the best plan ignoring the caps
    cheapest_score: Score | None = None
    step = max(1, total // 20)
    names = instance.resource_names
    for done, assignment in enumerate(itertools.product(names, repeat=len(instance.layers))):
        score = scorer.score(assignment)
        if caps.any and better(score, cheapest_score):
            cheapest, cheapest_score = assignment, score
        if score.feasible and not caps.allows(score.cost, -score.neg_throughput,
                                              instance.samples):
            continue
        if better(score, best_score):
            best, best_score = assignment, score
        if progress is not None and done % step == 0:
            progress(Progress(done, total, "enumerating assignments"))
    if best is None or best_score is None or not best_score.feasible:
        if cheapest is not None and cheapest_score is not None and cheapest_score.feasible:
            return infeasible_plan(scheduler, caps.reason(scorer.plan(cheapest, scheduler),
                                                          instance))
        closest = best or cheapest
        assert closest is not None
        return infeasible_plan(scheduler, _no_plan_reason(scorer, closest))
    return scorer.plan(best, scheduler)


def _no_plan_reason(scorer: AssignmentScorer, closest: tuple[str, ...]) -> str:
    plan = scorer.plan(closest, "brute")
    return f"none of the assignments is feasible; the closest one fails: {plan.reason}"
