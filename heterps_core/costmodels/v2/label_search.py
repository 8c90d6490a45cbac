"""The label DP over one server placement's options, pruned by the bounds of `bounds`.

Caps as in v1: the DP first tracks no resource's usage; a round whose answer overruns a cap
tracks that resource too and runs again (each round solves a relaxation exactly, so the first
answer that fits every cap is the optimum). A label is dropped when its exact cost and time
so far plus the bound of its cheapest completion exceed the best plan known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from heterps_core.budget import BudgetReached, Deadline
from heterps_core.costmodels.v2.bounds import Bounds
from heterps_core.costmodels.v2.incumbent import cost_limit
from heterps_core.costmodels.v2.labels import LabelBound, LabelDP, Labels, Solution
from heterps_core.costmodels.v2.relax import partition_bound
from heterps_core.costmodels.v2.terms import sync_label

# A batch of labels costs about this many labels' time (the work budget of `budgeted`).
CALL_WEIGHT = 20


class LabelSearch(Bounds):
    """Bounds, then the exact label DP over the options they keep."""

    def solve(self, deadline: Deadline | None) -> None:
        """The optimum over this placement (or BudgetReached with the bounds so far)."""
        if self.proven:
            return
        self._rounds([], deadline, None)

    def _rounds(self, capped: list[str], deadline: Deadline | None, labels: int | None) -> None:
        """The label DP, caps tracked round by round (`capped` grows in place: a later call
        starts from the caps found so far, a valid start as any). `labels`: abandon
        (Abandoned) once the pruning test has seen that many labels."""
        if self.table.size == 0:
            # every option is dearer than the incumbent: it is optimal
            self.proven = True
            return
        names = self.instance.resource_names
        candidates = self.table.candidates(names)
        upper = self.best.cost
        keep = self._label_bound() if math.isfinite(upper) else None
        if keep is not None and labels is not None:
            keep = budgeted(keep, labels)
        while True:
            solution = LabelDP(
                self.instance, candidates, capped, self.counts, self.rate, upper,
                bound=_timed(keep, deadline),
            ).solve()
            if solution is None:
                self.proven = True
                if self.best.solution is None:
                    what = "fits the availability caps" if capped else "meets the target"
                    self.reason = f"no chain of stages {what} ({sync_label(self.instance)})"
                return
            # each round solves a relaxation exactly: a lower bound
            self.lower = max(self.lower, solution.cost)
            over = _overrun(solution, self.counts)
            if not over:
                self.best.offer(solution)
                self.proven = True
                return
            capped[:] = sorted(set(capped) | over)

    def _label_bound(self) -> LabelBound:
        self._drop_dead()
        if self.sets is None:
            return lambda lab, j, r, capped: np.zeros(lab.size, dtype=bool)
        tabs = self.sets
        starts = self.starts
        relax = self.relax
        micro = relax.micro
        names = self.instance.resource_names
        most = cost_limit(self.best.cost)
        lam, mu = tabs.mult.lam, tabs.mult.mu
        floor = tabs.mult.floors[:, None]
        tau = None if tabs.mult.tau is None else tabs.mult.tau[:, None]
        offset = lam * self.budget + mu @ relax.counts

        def keep(lab: Labels, j: int, r: int, capped: Sequence[str]) -> np.ndarray:
            # a completion in class (floor, tau] has its longest stage >= max(X, floor)
            longest = np.maximum(lab.top[None, :], floor)
            time_used = lab.total[None, :] / micro + (1 - 1 / micro) * longest
            value = lab.cost[None, :] + lam[:, None] * time_used
            if capped:
                cols = [names.index(c) for c in capped]
                value = value + mu[:, cols] @ lab.usage.T
            value = value + tabs.tail[:, j + 1, r][:, None] - offset[:, None]
            if tau is not None:
                value[lab.top[None, :] > tau] = np.inf  # not a prefix of that class's plans
            return partition_bound(value, starts) <= most

        return keep


class Abandoned(Exception):
    """The trial label DP saw more labels than its budget."""


def budgeted(keep: LabelBound, labels: int) -> LabelBound:
    """`keep`, raising Abandoned once it has been asked about `labels` labels in all."""
    seen = [0]

    def counted(lab: Labels, j: int, r: int, capped: Sequence[str]) -> np.ndarray:
        seen[0] += lab.size + CALL_WEIGHT
        if seen[0] > labels:
            raise Abandoned
        return keep(lab, j, r, capped)

    return counted


def _timed(keep: LabelBound | None, deadline: Deadline | None) -> LabelBound | None:
    """`keep` (None: keep every label), raising BudgetReached once `deadline` passes. The
    label DP checks its own deadline on the wall clock; it gets none, and the budget (CPU
    seconds, budget.py) is checked here instead, each time it prunes a block of labels."""
    if deadline is None:
        return keep

    def timed(lab: Labels, j: int, r: int, capped: Sequence[str]) -> np.ndarray:
        if deadline.passed():
            raise BudgetReached
        if keep is None:
            return np.ones(lab.size, dtype=bool)
        return keep(lab, j, r, capped)

    return timed


def _overrun(solution: Solution, counts: dict[str, int]) -> set[str]:
    used: dict[str, int] = {}
    for _, _, res, units in solution.runs:
        used[res] = used.get(res, 0) + units
    return {r for r, u in used.items() if u > counts[r]}


