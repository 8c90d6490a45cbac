"""The exact DP without cross-stage caps: state (layer prefix, resource of the last stage).

Each candidate stage already respects its resource's `count` on its own; what this DP does
not check is that several stages on one resource together fit `count` (capacity_dp.py does).
Values are (cost, min throughput) compared lexicographically like the objective.
"""

from __future__ import annotations

import numpy as np

from heterps_core.costmodel import REL_TOL
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]  # (first layer, last layer, resource)


def uncapped_optimum(table: StageTable, banned: frozenset[str] = frozenset()) -> list[Run] | None:
    """The DP. Values are (cost, min throughput) compared as the objective does."""
    n, names = table.n_layers, table.resources
    n_res = len(names)
    stage_cost = [
        np.full_like(s.cost, np.inf) if s.resource in banned else s.cost for s in table.by_resource
    ]
    best_cost = np.full((n, n_res), np.inf)
    best_thr = np.zeros((n, n_res))
    back_first = np.zeros((n, n_res), dtype=np.int64)
    # excl[j, r]: best prefix 0..j whose last stage is NOT on r (stages must be maximal runs)
    excl_cost = np.full((n, n_res), np.inf)
    excl_thr = np.zeros((n, n_res))
    excl_from = np.zeros((n, n_res), dtype=np.int64)
    for j in range(n):
        for r, stages in enumerate(table.by_resource):
            prev_cost = np.empty(j + 1)
            prev_thr = np.empty(j + 1)
            prev_cost[0], prev_thr[0] = 0.0, np.inf
            prev_cost[1:] = excl_cost[:j, r]
            prev_thr[1:] = excl_thr[:j, r]
            cost = prev_cost + stage_cost[r][: j + 1, j]
            thr = np.minimum(prev_thr, stages.throughput[: j + 1, j])
            i = _lexicographic_best(cost, thr)
            if i is not None:
                best_cost[j, r], best_thr[j, r], back_first[j, r] = cost[i], thr[i], i
        for r in range(n_res):
            others = [q for q in range(n_res) if q != r]
            q = _lexicographic_best(best_cost[j, others], best_thr[j, others])
            if q is not None:
                excl_cost[j, r] = best_cost[j, others[q]]
                excl_thr[j, r] = best_thr[j, others[q]]
                excl_from[j, r] = others[q]
    last_r = _lexicographic_best(best_cost[n - 1], best_thr[n - 1])
    if last_r is None:
        return None
    runs: list[Run] = []
    j, r = n - 1, last_r
    while j >= 0:
        i = int(back_first[j, r])
        runs.append((i, j, names[r]))
        if i > 0:
            r = int(excl_from[i - 1, r])
        j = i - 1
    runs.reverse()
    return runs


def _lexicographic_best(cost: np.ndarray, thr: np.ndarray) -> int | None:
    """Index of the lowest cost; among costs equal to it (relative 1e-9), the highest thr."""
    if cost.size == 0:
        return None
    low = float(cost.min())
    if not np.isfinite(low):
        return None
    tied = cost - low <= np.maximum(REL_TOL * np.abs(cost), 1e-12)
    return int(np.argmax(np.where(tied, thr, -np.inf)))
