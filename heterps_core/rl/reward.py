"""The terminal reward shared by the gymnasium environment and the batched trainer.

reward = -cost_per_hour / reference, where the reference is the best homogeneous plan's cost
(or, when no single resource can run the whole model, the compute lower bound of
`features.reference_cost`). A feasible plan is clipped at -`MAX_RATIO` and an infeasible one
gets -`INFEASIBLE_PENALTY`, so every feasible plan scores higher than every infeasible one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heterps_core.rl.fastcost import AssignmentCosts, Outcome
from heterps_core.rl.features import reference_cost

MAX_RATIO = 5.0
INFEASIBLE_PENALTY = 6.0


class Rewarder:
    """Turns assignments (resource indices) into rewards for one instance."""

    def __init__(self, costs: AssignmentCosts) -> None:
        self.costs = costs
        homogeneous = costs.homogeneous()
        self.homogeneous = homogeneous
        if homogeneous is not None and homogeneous[1].cost:
            self.reference = homogeneous[1].cost
        else:
            self.reference = reference_cost(costs.instance)

    def of_outcome(self, outcome: Outcome) -> float:
        if outcome.cost is None:
            return -INFEASIBLE_PENALTY
        return -min(outcome.cost / self.reference, MAX_RATIO)

    def batch(self, assignments: np.ndarray) -> tuple[np.ndarray, list[Outcome]]:
        """Rewards of a [batch, n_layers] array of assignments, with each outcome."""
        outcomes = [self.costs.outcome(row) for row in assignments.tolist()]
        rewards = np.array([self.of_outcome(o) for o in outcomes], dtype=np.float64)
        return rewards, outcomes

    def one(self, assignment: Sequence[int]) -> tuple[float, Outcome]:
        outcome = self.costs.outcome(assignment)
        return self.of_outcome(outcome), outcome
