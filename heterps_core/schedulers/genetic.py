"""`genetic`: a seeded genetic algorithm over assignments (one gene per layer).

Tournament selection, two-point crossover, two mutations (one layer to a random resource;
a random segment to one resource, which moves stage boundaries), elitism. The population
starts from random plans plus every single-resource plan. Infeasible plans are ranked by how
far they are from feasible (see scoring.py).
"""

from __future__ import annotations

import random

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.common import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.random_search import random_plan
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.scoring import AssignmentScorer, Score

POPULATION = 40
GENERATIONS = 100
ELITE = 2


@register
class GeneticScheduler(Scheduler):
    name = "genetic"
    summary = f"Genetic algorithm, {POPULATION} plans x {GENERATIONS} generations; seeded."
    stochastic = True

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        rng = random.Random(self.seed)
        generations = int(self.options.get("generations") or GENERATIONS)  # type: ignore[call-overload]
        deadline = Deadline.after(self.budget_s)  # CPU seconds (budget.py)
        scorer = AssignmentScorer(instance)
        names = instance.resource_names
        n = len(instance.layers)
        population = [[r] * n for r in names]
        population += [random_plan(rng, instance) for _ in range(POPULATION - len(population))]
        scored = _rank(scorer, population)
        for gen in range(generations):
            children = [list(a) for _, a in scored[:ELITE]]
            while len(children) < POPULATION:
                mother = _tournament(rng, scored)
                father = _tournament(rng, scored)
                child = _crossover(rng, mother, father)
                _mutate(rng, child, names)
                children.append(child)
            scored = _rank(scorer, children)
            progress(Progress(gen + 1, generations, "evolving", {"best_cost": scored[0][0].cost}))
            if passed(deadline):
                break
        best_score, best = scored[0]
        plan = scorer.plan(best, self.name)
        if not best_score.feasible:
            return infeasible_plan(
                self.name, f"no feasible plan evolved; the closest fails: {plan.reason}", best
            )
        return plan


def _rank(scorer: AssignmentScorer, population: list[list[str]]) -> list[tuple[Score, list[str]]]:
    return sorted(((scorer.score(a), a) for a in population), key=lambda pair: pair[0])


def _tournament(rng: random.Random, scored: list[tuple[Score, list[str]]], k: int = 3) -> list[str]:
    # `scored` is sorted best first, so the smallest sampled index wins the tournament.
    return scored[min(rng.sample(range(len(scored)), k))][1]


def _crossover(rng: random.Random, a: list[str], b: list[str]) -> list[str]:
    n = len(a)
    if n < 3:
        return list(a if rng.random() < 0.5 else b)
    i, j = sorted(rng.sample(range(1, n), 2))
    return a[:i] + b[i:j] + a[j:]


def _mutate(rng: random.Random, child: list[str], names: list[str]) -> None:
    n = len(child)
    if rng.random() < 0.5:
        child[rng.randrange(n)] = rng.choice(names)
    if rng.random() < 0.5:
        i = rng.randrange(n)
        j = rng.randrange(i, min(n, i + max(1, n // 4)))
        res = rng.choice(names)
        for k in range(i, j + 1):
            child[k] = res
