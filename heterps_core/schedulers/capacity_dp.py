"""The exact DP with availability caps: state (layer prefix, last resource, units used so far).

Only the resources in `capped` (those whose caps some relaxed optimum overran) get a usage
dimension; their usages are packed into one mixed-radix index `u` in 0..prod(count+1)-1.
Values are (cost, min throughput), compared lexicographically as the objective does; both
grow monotonically along a chain, and the state holds everything that constrains the rest of
the plan (the last resource for maximality, the usage for the caps), so the principle of
optimality holds. See docs/schedulers.md for the proof.

Only the candidate stages in `keep` are tried (exact_bounds.py drops those that cannot be
in an optimum), so the work is `kept stages x usage states`, not `L^2 x R x states`. For
each prefix only the best and second-best last resource per usage state are stored (the
best prefix "not ending on r" is one of the two), plus one back-pointer per
(layer, resource, state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from heterps_core.budget import BudgetReached, Deadline, passed
from heterps_core.costmodels.common import REL_TOL
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]
DpProgress = Callable[[int, int], None]  # (layers done, layers)


def usage_states(table: StageTable, capped: Sequence[str]) -> int:
    size = 1
    for name in capped:
        size *= table.instance.resource(name).count + 1
    return size


def dp_work(table: StageTable, capped: Sequence[str], keep: np.ndarray | None) -> float:
    """Cell updates of `capped_dp`: kept candidate stages x usage states."""
    stages = (table.units_by_last > 0) if keep is None else keep
    return float(np.count_nonzero(stages)) * usage_states(table, capped)


def dp_bytes(table: StageTable, capped: Sequence[str]) -> float:
    """Memory `capped_dp` allocates: back-pointers plus the two best prefixes per state."""
    size = usage_states(table, capped)
    n, n_res = table.n_layers, len(table.resources)
    return n * n_res * size * _back_dtype(n).itemsize + (n + 1) * size * 2 * (8 + 8 + 2)


def capped_dp(
    table: StageTable,
    capped: Sequence[str],
    keep: np.ndarray | None = None,
    deadline: Deadline | None = None,
    progress: DpProgress | None = None,
) -> list[Run] | None:
    """The optimum with the caps of `capped` enforced (other resources' sums unchecked).

    `keep[r, last, first]` selects the candidate stages to try (default: every stage that
    exists); raises BudgetReached once `deadline` (CPU seconds, budget.py) passes.
    """
    n, names = table.n_layers, table.resources
    n_res = len(names)
    keep = (table.units_by_last > 0) if keep is None else keep & (table.units_by_last > 0)
    counts = [table.instance.resource(r).count for r in capped]
    strides = [int(np.prod([c + 1 for c in counts[:k]])) for k in range(len(counts))]
    size = usage_states(table, capped)
    usage = np.arange(size)
    digits: dict[int, tuple[np.ndarray, int]] = {}
    for k, name in enumerate(capped):
        digits[names.index(name)] = ((usage // strides[k]) % (counts[k] + 1), strides[k])

    # e1/e2[i, u]: the best and second-best prefix over layers 0..i-1 at usage u, and the
    # resource of its last stage (-1: none). e*[0] is the empty prefix.
    e1c, e2c = np.full((n + 1, size), np.inf), np.full((n + 1, size), np.inf)
    e1t, e2t = np.zeros((n + 1, size)), np.zeros((n + 1, size))
    e1r, e2r = np.full((n + 1, size), -1, np.int16), np.full((n + 1, size), -1, np.int16)
    e1c[0, 0], e1t[0, 0] = 0.0, np.inf
    back = np.zeros((n, n_res, size), dtype=_back_dtype(n))
    cols = np.arange(size)
    every = max(1, n // 50)

    for j in range(n):
        if passed(deadline):
            raise BudgetReached
        if progress is not None and j % every == 0:
            progress(j, n)
        bc = np.full((n_res, size), np.inf)
        bt = np.zeros((n_res, size))
        for r in range(n_res):
            firsts = np.flatnonzero(keep[r, j, : j + 1])
            if firsts.size == 0:
                continue
            use2 = e1r[firsts] == r  # the best prefix ends on r: take the runner-up
            prev_cost = np.where(use2, e2c[firsts], e1c[firsts])
            prev_thr = np.where(use2, e2t[firsts], e1t[firsts])
            if r in digits:
                # Arriving at usage u through a stage of k units means coming from u - k*stride.
                dig, stride = digits[r]
                units = table.units_by_last[r, j, firsts][:, None]
                valid = dig[None, :] >= units
                src = np.where(valid, usage[None, :] - units * stride, 0)
                prev_cost = np.where(valid, np.take_along_axis(prev_cost, src, axis=1), np.inf)
                prev_thr = np.where(valid, np.take_along_axis(prev_thr, src, axis=1), 0.0)
            cost = prev_cost + table.cost_by_last[r, j, firsts][:, None]
            thr = np.minimum(prev_thr, table.throughput_by_last[r, j, firsts][:, None])
            pick, ok = _best_along_first_axis(cost, thr)
            bc[r] = np.where(ok, cost[pick, cols], np.inf)
            bt[r] = np.where(ok, thr[pick, cols], 0.0)
            back[j, r] = firsts[pick]
        q1, ok1 = _best_along_first_axis(bc, bt)
        e1c[j + 1] = np.where(ok1, bc[q1, cols], np.inf)
        e1t[j + 1] = np.where(ok1, bt[q1, cols], 0.0)
        e1r[j + 1] = np.where(ok1, q1, -1)
        bc[q1, cols] = np.inf
        q2, ok2 = _best_along_first_axis(bc, bt)
        e2c[j + 1] = np.where(ok2, bc[q2, cols], np.inf)
        e2t[j + 1] = np.where(ok2, bt[q2, cols], 0.0)
        e2r[j + 1] = np.where(ok2, q2, -1)

    pick, ok = _best_along_first_axis(e1c[n][:, None], e1t[n][:, None])
    if not ok[0]:
        return None
    u = int(pick[0])
    r = int(e1r[n, u])
    runs: list[Run] = []
    j = n - 1
    while j >= 0:
        i = int(back[j, r, u])
        runs.append((i, j, names[r]))
        if r in digits:
            u -= int(table.units_by_last[r, j, i]) * digits[r][1]
        if i > 0:
            r = int(e1r[i, u]) if int(e1r[i, u]) != r else int(e2r[i, u])
        j = i - 1
    runs.reverse()
    return runs


def _back_dtype(n_layers: int) -> np.dtype:
    return np.dtype(np.int16 if n_layers < 2**15 else np.int32)


def _best_along_first_axis(cost: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the row of lowest cost, ties (relative 1e-9) to the highest throughput."""
    low = cost.min(axis=0)
    ok = np.isfinite(low)
    with np.errstate(invalid="ignore"):  # inf - inf where nothing reaches a state
        tied = cost - low[None, :] <= np.maximum(REL_TOL * np.abs(cost), 1e-12)
    tied &= np.isfinite(cost)
    pick = np.argmax(np.where(tied, thr, -np.inf), axis=0)
    return pick, ok
