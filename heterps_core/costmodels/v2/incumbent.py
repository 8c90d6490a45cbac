"""The best plan known of one placement's stage problem, and what a plan may cost to matter."""

from __future__ import annotations

import math
from dataclasses import dataclass

from heterps_core.costmodels.common import REL_TOL, costs_equal
from heterps_core.costmodels.v2.labels import Solution


def cost_limit(upper: float) -> float:
    """What a plan may cost and still matter, given the best plan known costs `upper`."""
    # A plan tied with the best known one (costs equal within REL_TOL) must survive, and the
    # bounds are sums in another order than the plan's cost: a little slack on top.
    return upper * (1 + 2 * REL_TOL) + 1e-9


@dataclass
class Incumbent:
    """The best plan known that fits every cap (its stage cost and throughput). `cost` prunes:
    the least of its cost and `ceiling`, what a plan must not exceed to matter at all (the
    best plan of another server placement, less this one's server cost)."""

    solution: Solution | None = None
    _ceiling: float = math.inf
    _own: float = math.inf

    @property
    def cost(self) -> float:
        return min(self._own, self._ceiling)

    @property
    def ceiling(self) -> float:
        return self._ceiling

    @ceiling.setter
    def ceiling(self, value: float) -> None:
        self._ceiling = min(self._ceiling, value)

    def offer(self, solution: Solution | None) -> None:
        if solution is None:
            return
        if self.solution is None or better_solution(solution, self.solution):
            self.solution, self._own = solution, solution.cost


def better_solution(a: Solution, b: Solution) -> bool:
    if not costs_equal(a.cost, b.cost):
        return a.cost < b.cost
    return a.throughput > b.throughput * (1 + REL_TOL)
