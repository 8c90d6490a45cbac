"""Certified bounds for the capped problem, used to prune the exact search and to report a gap.

- Lower bound: Lagrangian relaxation of the caps. For multipliers `lam_r >= 0`, every plan P
  that fits the caps has `cost(P) >= cost(P) + sum_r lam_r (units_r(P) - count_r)`, and the
  minimum of the right-hand side over *all* plans is a cost-only DP with stage costs
  `c + lam_r * units` (no caps), minus `sum lam_r count_r`. Subgradient steps on `lam` raise
  it; `lam = 0` gives the uncapped optimum.
- Upper bound: any plan the DPs above return that happens to fit every cap, and the plans of
  `exact_ilp.capped_upper_bound` (overrun resources banned).
- Pruning: a plan through candidate stage c costs at least `pre(c) + c_lam + suf(c) -
  sum lam count` (cheapest prefix before it not ending on its resource, the stage, cheapest
  suffix after it not starting on it, all at the priced costs). A stage whose bound exceeds
  the upper bound cannot be in an optimum and the searches skip it; see docs/schedulers.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.common import REL_TOL
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]
BoolArray = NDArray[np.bool_]


@dataclass
class CapBounds:
    """What is known about the capped optimum's cost: lower <= optimum <= upper."""

    lower: float
    upper: float
    best: list[Run] | None  # a plan fitting every cap that costs `upper`; None if none known
    through: np.ndarray  # [r, last, first]: no capped plan using that stage costs less
    exists: BoolArray  # [r, last, first]: the stage can be provisioned

    @property
    def keep(self) -> BoolArray:
        """[r, last, first]: the stages that may be in an optimum."""
        if not np.isfinite(self.upper):
            return self.exists
        return self.exists & (self.through <= self.upper * (1 + REL_TOL) + 1e-12)

    def promising(self, fraction: float) -> BoolArray:
        """The stages whose bound is in the lowest `fraction` of [lower, upper]."""
        if not np.isfinite(self.upper):
            return self.exists
        return self.exists & (self.through <= self.lower + fraction * (self.upper - self.lower))

    def offer(self, runs: list[Run], cost: float) -> None:
        """A plan that fits every cap: the new upper bound if it is cheaper."""
        if cost < self.upper:
            self.upper, self.best = cost, runs

    @property
    def gap(self) -> float:
        """Relative gap upper / lower - 1 (inf if no plan is known)."""
        if not np.isfinite(self.upper):
            return float("inf")
        return max(0.0, self.upper / self.lower - 1.0) if self.lower > 0 else 0.0


def cap_bounds(
    table: StageTable, iterations: int = 40, deadline: Deadline | None = None
) -> CapBounds:
    """Lagrangian lower bound, best plan seen that fits the caps, and the stages to keep.

    Stops raising the bound early once `deadline` (CPU seconds, budget.py) passes.
    """
    counts = np.array([table.instance.resource(r).count for r in table.resources], float)
    units = table.units_by_last.astype(np.float64)
    base = table.cost_by_last
    lam = np.zeros(len(counts))
    best_runs = _banned_plan(table)
    upper = _plan_cost(table, best_runs) if best_runs is not None else np.inf
    lower = -np.inf
    best_lam = lam.copy()
    step = 1.0
    for _ in range(iterations):
        if passed(deadline):
            break
        priced = base + lam[:, None, None] * units
        value, runs = cheapest_chain(priced, table.resources)
        if runs is None:  # no chain at all: no plan, with or without caps
            nothing = np.zeros(base.shape, dtype=bool)
            return CapBounds(np.inf, np.inf, None, np.full(base.shape, np.inf), nothing)
        bound = value - float(lam @ counts)
        if bound > lower:
            lower, best_lam = bound, lam.copy()
        used = _units_used(table, runs)
        cost = _plan_cost(table, runs)
        if np.all(used <= counts) and cost < upper:
            upper, best_runs = cost, runs
        if upper <= lower * (1 + REL_TOL):
            break
        grad = used - counts
        grad[(lam <= 0) & (grad < 0)] = 0.0  # projected: lam stays >= 0
        norm = float(grad @ grad)
        if norm == 0:
            break
        target = upper if np.isfinite(upper) else lower * 1.1 + 1e-9
        lam = np.maximum(0.0, lam + step * (target - bound) / norm * grad)
        step *= 0.9
    priced = base + best_lam[:, None, None] * units
    through = np.maximum(stage_bounds(priced) - float(best_lam @ counts), stage_bounds(base))
    return CapBounds(max(lower, 0.0), upper, best_runs, through, table.units_by_last > 0)


def cheapest_chain(cost_by_last: np.ndarray, names: list[str]) -> tuple[float, list[Run] | None]:
    """Cost-only DP over (prefix, last resource) on `[r, last, first]` stage costs."""
    n_res, n, _ = cost_by_last.shape
    pre = np.full((n + 1, n_res), np.inf)
    pre_from = np.zeros((n + 1, n_res), dtype=np.int64)
    pre[0] = 0.0
    back = np.zeros((n, n_res), dtype=np.int64)
    best = np.full((n, n_res), np.inf)
    rows = np.arange(n_res)
    for j in range(n):
        vals = cost_by_last[:, j, : j + 1] + pre[: j + 1].T
        first = vals.argmin(axis=1)
        best[j] = vals[rows, first]
        back[j] = first
        pre[j + 1], pre_from[j + 1] = min_of_others(best[j])
    last_r = int(best[n - 1].argmin())
    value = float(best[n - 1, last_r])
    if not np.isfinite(value):
        return value, None
    runs: list[Run] = []
    j, r = n - 1, last_r
    while j >= 0:
        i = int(back[j, r])
        runs.append((i, j, names[r]))
        r = int(pre_from[i, r])
        j = i - 1
    runs.reverse()
    return value, runs


def stage_bounds(cost_by_last: np.ndarray) -> np.ndarray:
    """[r, last, first]: the cheapest chain (no caps) that uses stage first..last on r."""
    n_res, n, _ = cost_by_last.shape
    pre = np.full((n + 1, n_res), np.inf)
    pre[0] = 0.0
    for j in range(n):
        pre[j + 1], _ = min_of_others((cost_by_last[:, j, : j + 1] + pre[: j + 1].T).min(axis=1))
    by_first = np.ascontiguousarray(cost_by_last.transpose(0, 2, 1))  # [r, first, last]
    suf = np.full((n + 1, n_res), np.inf)
    suf[n] = 0.0
    for i in range(n - 1, -1, -1):
        suf[i], _ = min_of_others((by_first[:, i, i:] + suf[i + 1 :].T).min(axis=1))
    with np.errstate(invalid="ignore"):
        return pre[:n].T[:, None, :] + cost_by_last + suf[1:].T[:, :, None]


def min_of_others(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """out[r] = min over q != r of values[q], and that q (inf / 0 for a single resource)."""
    n_res = values.size
    if n_res == 1:
        return np.full(1, np.inf), np.zeros(1, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    first, second = order[0], order[1]
    out = np.full(n_res, values[first])
    who = np.full(n_res, first, dtype=np.int64)
    out[first], who[first] = values[second], second
    return out, who


def _units_used(table: StageTable, runs: list[Run]) -> np.ndarray:
    used = np.zeros(len(table.resources))
    for first, last, res in runs:
        r = table.resources.index(res)
        used[r] += table.units_by_last[r, last, first]
    return used


def _plan_cost(table: StageTable, runs: list[Run]) -> float:
    total = 0.0
    for first, last, res in runs:
        total += float(table.cost_by_last[table.resources.index(res), last, first])
    return total


def _banned_plan(table: StageTable) -> list[Run] | None:
    """The plan behind `capped_upper_bound`: the DP with overrun resources banned."""
    from heterps_core.schedulers.chain_dp import uncapped_optimum

    counts = np.array([table.instance.resource(r).count for r in table.resources])
    banned: set[str] = set()
    while len(banned) < len(table.resources):
        runs = uncapped_optimum(table, frozenset(banned))
        if runs is None:
            return None
        over = {table.resources[r] for r in np.flatnonzero(_units_used(table, runs) > counts)}
        if not over:
            return runs
        banned |= over
    return None
