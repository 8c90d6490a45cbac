"""Fast scoring of whole assignments for the search baselines (brute, greedy, genetic, ...).

Stage provisioning is cached per (first, last, resource), so scoring an assignment costs
O(stages). Scores are ordered like the objective: feasible before infeasible, then lower
cost, then higher throughput; infeasible ones are ranked by how far they are from feasible,
which gives the stochastic searches a gradient to follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.common import REL_TOL, costs_equal, stages_of
from heterps_core.instance import Instance
from heterps_core.plan import Plan

# An infeasible assignment scores this many "plan costs" worse per violation unit.
_PENALTY = 1e6


@dataclass(frozen=True, order=True)
class Score:
    """Smaller is better; compares exactly like the objective for feasible plans."""

    infeasibility: float
    cost: float
    neg_throughput: float

    @property
    def feasible(self) -> bool:
        return self.infeasibility == 0

    def value(self) -> float:
        """One number for optimisers that need a scalar (bayes)."""
        return self.cost + _PENALTY * self.infeasibility


class AssignmentScorer:
    """Scores assignments (tuples of resource names) against one instance."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.model = cost_model_for(instance)
        self._stage: dict[tuple[int, int, str], tuple[int, float, float] | None] = {}
        self._whole: dict[tuple[str, ...], Score] = {}
        self.evaluations = 0

    def stage(self, first: int, last: int, res: str) -> tuple[int, float, float] | None:
        """(units, cost per hour, throughput) of one stage, or None if it cannot exist."""
        key = (first, last, res)
        if key not in self._stage:
            self._stage[key] = self._provision(first, last, res)
        return self._stage[key]

    def _provision(self, first: int, last: int, res: str) -> tuple[int, float, float] | None:
        stage = self.model.stage(first, last, res)
        if isinstance(stage, str):
            return None
        return stage.units, stage.cost_per_hour, stage.throughput

    def score(self, assignment: Sequence[str]) -> Score:
        self.evaluations += 1
        if not self.model.stagewise:
            return self._score_whole(tuple(assignment))
        bad_layers = 0
        cost = 0.0
        throughput = float("inf")
        used: dict[str, int] = {}
        for first, last, res in stages_of(assignment):
            stage = self.stage(first, last, res)
            if stage is None:
                bad_layers += last - first + 1
                continue
            units, stage_cost, stage_thr = stage
            used[res] = used.get(res, 0) + units
            cost += stage_cost
            throughput = min(throughput, stage_thr)
        over = sum(
            max(0, units - self.instance.resource(res).count) for res, units in used.items()
        )
        infeasibility = float(bad_layers) + over / max(1, sum(used.values()))
        return Score(infeasibility, cost, -throughput if throughput != float("inf") else 0.0)

    def _score_whole(self, assignment: tuple[str, ...]) -> Score:
        """A model that chooses units per plan (v2: stages taking turns share one time
        budget) provisions an assignment as a whole (cached: the searches revisit them)."""
        if assignment not in self._whole:
            plan = self.model.evaluate(list(assignment), "score")
            if plan.feasible:
                self._whole[assignment] = Score(
                    0.0, plan.cost_per_hour or 0.0, -(plan.throughput or 0.0)
                )
            else:
                bad = sum(1 for s in plan.stages if s.units is None) or 1
                self._whole[assignment] = Score(float(bad), 0.0, 0.0)
        return self._whole[assignment]

    def plan(self, assignment: Sequence[str], scheduler: str) -> Plan:
        return self.model.evaluate(list(assignment), scheduler)


def better(candidate: Score, incumbent: Score | None) -> bool:
    """The objective on scores: feasible first, lower cost (relative 1e-9), higher throughput."""
    if incumbent is None:
        return True
    if candidate.feasible != incumbent.feasible:
        return candidate.feasible
    if not candidate.feasible:
        return candidate < incumbent
    if not costs_equal(candidate.cost, incumbent.cost):
        return candidate.cost < incumbent.cost
    return -candidate.neg_throughput > -incumbent.neg_throughput * (1 + REL_TOL)
