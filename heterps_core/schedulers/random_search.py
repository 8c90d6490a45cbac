"""`random`: the best of many random plans (random stage cuts, random resource per stage).

Sampling cuts rather than independent layers keeps the number of stages realistic; a plan
with a resource per layer drawn independently is almost never feasible on deep chains.
"""

from __future__ import annotations

import itertools
import random

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.common import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.scoring import AssignmentScorer, Score, better

DEFAULT_SAMPLES = 2000


@register
class RandomScheduler(Scheduler):
    name = "random"
    summary = f"Best of {DEFAULT_SAMPLES} random plans (option samples=N); seeded."
    stochastic = True

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        rng = random.Random(self.seed)
        samples = int(self.options.get("samples") or DEFAULT_SAMPLES)  # type: ignore[call-overload]
        deadline = Deadline.after(self.budget_s)  # CPU seconds (budget.py)
        scorer = AssignmentScorer(instance)
        best: list[str] | None = None
        best_score: Score | None = None
        for k in range(samples):
            assignment = random_plan(rng, instance)
            score = scorer.score(assignment)
            if better(score, best_score):
                best, best_score = assignment, score
            if k % 200 == 0:
                progress(Progress(k, samples, "sampling plans"))
            if passed(deadline):
                break
        assert best is not None
        plan = scorer.plan(best, self.name)
        if not plan.feasible:
            return infeasible_plan(
                self.name, f"no sampled plan is feasible; the closest fails: {plan.reason}", best
            )
        return plan


def random_plan(rng: random.Random, instance: Instance) -> list[str]:
    n = len(instance.layers)
    names = instance.resource_names
    n_stages = rng.randint(1, min(n, 2 * len(names)))
    cuts = sorted(rng.sample(range(1, n), n_stages - 1)) if n > 1 else []
    bounds = [0, *cuts, n]
    out: list[str] = []
    for a, b in itertools.pairwise(bounds):
        out.extend([rng.choice(names)] * (b - a))
    return out
