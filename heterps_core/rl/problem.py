"""One instance prepared for training the layer policy: its features and cost model, the
rewards' baseline, and the plans the policy found (the best one, the elite it imitates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heterps_core.instance import Instance
from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better
from heterps_core.rl.features import featurize
from heterps_core.rl.policy import EncodedInstance
from heterps_core.rl.reward import Rewarder


class Problem:
    """One instance prepared for training: tensors, cost model, baseline and best plan seen."""

    def __init__(self, instance: Instance, dynamic_mask: bool = True) -> None:
        self.instance = instance
        self.costs = AssignmentCosts(instance)
        # The dynamic mask prices stages one by one: exact on v1 instances, not on v2 ones.
        self.encoded = EncodedInstance(
            featurize(instance), self.costs, dynamic_mask and self.costs.additive
        )
        self.elite: list[tuple[float, list[int]]] = []  # (cost, plan), cheapest first
        self.rewarder = Rewarder(self.costs)
        self.baseline: float | None = None
        self.best: list[int] | None = None
        self.best_outcome: Outcome | None = None
        self.first_reason: str | None = None  # why the first infeasible plan failed
        self.first: tuple[list[int], Outcome] | None = None  # a start when none is feasible

    @property
    def mask(self) -> np.ndarray:
        return self.encoded.features.mask

    def offer(self, assignment: Sequence[int], outcome: Outcome) -> bool:
        """Keep `assignment` if it beats the best plan seen; True when it does."""
        if self.first is None:
            self.first = ([int(a) for a in assignment], outcome)
        if outcome.reason is not None and self.first_reason is None:
            self.first_reason = outcome.reason
        if outcome.cost is not None:
            self._remember(outcome.cost, [int(a) for a in assignment])
        if better(outcome, self.best_outcome):
            self.best, self.best_outcome = [int(a) for a in assignment], outcome
            return True
        return False

    def _remember(self, cost: float, plan: list[int], size: int = 16) -> None:
        if len(self.elite) >= size and cost >= self.elite[-1][0]:
            return
        if any(p == plan for _, p in self.elite):
            return
        self.elite.append((cost, plan))
        self.elite.sort(key=lambda e: e[0])
        del self.elite[size:]
