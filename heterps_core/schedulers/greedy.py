"""`greedy`: decide layers in order, each to the resource that looks cheapest right now.

For layer l, with layers before it fixed, each resource r is tried for l with the rest of the
chain provisionally on one resource r' (each r' is tried, so the partial plan is a
complete, priceable plan); the best such plan by the objective fixes layer l to r.
L x R x R plan evaluations, no backtracking.
"""

from __future__ import annotations

from heterps_core.costmodels.common import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.scoring import AssignmentScorer, Score, better


@register
class GreedyScheduler(Scheduler):
    name = "greedy"
    summary = "Layer by layer, the resource whose completed plan is cheapest at that moment."

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        scorer = AssignmentScorer(instance)
        n = len(instance.layers)
        fixed: list[str] = []
        for layer in range(n):
            best_res, best_score = "", None
            for res in instance.resource_names:
                for rest in instance.resource_names:
                    score: Score = scorer.score(fixed + [res] + [rest] * (n - layer - 1))
                    if better(score, best_score):
                        best_res, best_score = res, score
            fixed.append(best_res)
            progress(Progress(layer + 1, n, f"layer {instance.layers[layer].name} -> {best_res}"))
        plan = scorer.plan(fixed, self.name)
        if not plan.feasible:
            reason = f"greedy found no feasible plan: {plan.reason}"
            return infeasible_plan(self.name, reason, fixed)
        return plan
