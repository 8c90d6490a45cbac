"""The cost model on integer assignments, with stages memoised, for sampling thousands of plans.

RL training and the local search price the same few hundred stages over and over; building a
`Plan` each time would dominate the run. Under a stagewise cost model (v1)
`AssignmentCosts` prices stages with the model's own `stage`, the code its `evaluate` runs, so
the two cannot disagree; it only skips the `Plan` objects and remembers every (first, last,
resource) it has provisioned. Under a model that chooses units per plan (v2: sync mode,
micro-batches, a parameter server) a plan's cost is not a sum of stage costs, so `outcome`
asks the model's `evaluate` itself (memoised per assignment) and `additive` is False: the
trainer then uses the terminal reward and the static mask (`training.py`), and `stage` stays
only a hint for the decoder's features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from heterps_core.costmodels import cost_model_for
from heterps_core.instance import Instance
from heterps_core.plan import Plan

_UNPROVISIONABLE = (-1, 0.0, 0.0)


@dataclass(frozen=True)
class Outcome:
    """Cost and throughput of a feasible assignment, or `cost is None` and why not."""

    cost: float | None
    throughput: float = 0.0
    reason: str | None = None

    @property
    def feasible(self) -> bool:
        return self.cost is not None


class AssignmentCosts:
    """Prices assignments given as resource indices (0..n_resources-1), caching each stage."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.model = cost_model_for(instance)
        self.names = instance.resource_names
        self.prices = [r.price_per_hour for r in instance.resources]
        self.counts = [r.count for r in instance.resources]
        self.n_layers = len(instance.layers)
        self.n_resources = len(self.names)
        self._stages: dict[tuple[int, int, int], tuple[int, float, float]] = {}
        self._reasons: dict[tuple[int, int, int], str] = {}
        # stagewise (v1): a plan's cost is the sum of its stages' (docs/cost-model.md)
        self.additive = self.model.stagewise
        self._plans: dict[tuple[int, ...], Outcome] = {}

    def stage(self, first: int, last: int, r: int) -> tuple[int, float, float]:
        """(units, cost per hour, throughput) of layers first..last on resource r; units -1 if
        the stage cannot be provisioned (see `reason`)."""
        key = (first, last, r)
        hit = self._stages.get(key)
        if hit is not None:
            return hit
        found = self.model.stage(first, last, self.names[r])
        if isinstance(found, str):
            self._reasons[key] = found
            value = _UNPROVISIONABLE
        else:
            value = (found.units, found.cost_per_hour, found.throughput)
        self._stages[key] = value
        return value

    def outcome(self, assignment: Sequence[int]) -> Outcome:
        """The cost model's verdict on one assignment (same numbers as `costmodel.evaluate`)."""
        if not self.additive:
            return self._evaluated(assignment)
        cost = 0.0
        throughput = float("inf")
        used = [0] * self.n_resources
        start = 0
        n = self.n_layers
        for i in range(1, n + 1):
            if i < n and assignment[i] == assignment[start]:
                continue
            r = int(assignment[start])
            units, stage_cost, stage_thr = self.stage(start, i - 1, r)
            if units < 0:
                return Outcome(None, reason=self._reasons[(start, i - 1, r)])
            used[r] += units
            cost += stage_cost
            throughput = min(throughput, stage_thr)
            start = i
        for r, units in enumerate(used):
            if units > self.counts[r]:
                return Outcome(
                    None,
                    reason=f"stages on {self.names[r]} need {units} units in total, "
                    f"{self.counts[r]} exist",
                )
        return Outcome(cost, throughput)

    def _evaluated(self, assignment: Sequence[int]) -> Outcome:
        key = tuple(int(a) for a in assignment)
        hit = self._plans.get(key)
        if hit is None:
            plan = self.plan(key)
            hit = (Outcome(plan.cost_per_hour, plan.throughput or 0.0)
                   if plan.feasible and plan.cost_per_hour is not None
                   else Outcome(None, reason=plan.reason or "infeasible"))
            self._plans[key] = hit
        return hit

    def plan(self, assignment: Sequence[int], scheduler: str = "rl") -> Plan:
        """The full spec plan of an assignment (the model's `evaluate` itself)."""
        return self.model.evaluate([self.names[int(r)] for r in assignment], scheduler)

    def homogeneous(self) -> tuple[int, Outcome] | None:
        """The best single-resource assignment: (resource index, outcome), or None if none is
        feasible."""
        best: tuple[int, Outcome] | None = None
        for r in range(self.n_resources):
            out = self.outcome([r] * self.n_layers)
            if out.feasible and (best is None or better(out, best[1])):
                best = (r, out)
        return best


def better(a: Outcome, b: Outcome | None) -> bool:
    """The spec's objective (§4) on outcomes: feasible, cheaper, then higher throughput."""
    if a.cost is None:
        return False
    if b is None or b.cost is None:
        return True
    if abs(a.cost - b.cost) > 1e-9 * max(abs(a.cost), abs(b.cost), 1e-12):
        return a.cost < b.cost
    return a.throughput > b.throughput * (1 + 1e-9)


def stage_runs(assignment: Sequence[int]) -> list[tuple[int, int, int]]:
    """Maximal runs of equal resource indices as (first, last, resource)."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for i in range(1, len(assignment) + 1):
        if i == len(assignment) or assignment[i] != assignment[start]:
            runs.append((start, i - 1, int(assignment[start])))
            start = i
    return runs
