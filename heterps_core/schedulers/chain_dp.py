"""The exact DP without cross-stage caps: state (layer prefix, resource of the last stage).

Each candidate stage already respects its resource's `count` on its own; what this DP does
not check is that several stages on one resource together fit `count` (capacity_dp.py does).
Values are (cost, min throughput) compared lexicographically like the objective.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from heterps_core.costmodels.common import REL_TOL
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]  # (first layer, last layer, resource)


def uncapped_optimum(
    table: StageTable,
    banned: frozenset[str] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
) -> list[Run] | None:
    """The DP. Values are (cost, min throughput) compared as the objective does.

    One step per last layer j, vectorised over the resources: the stage costs of every first
    layer i <= j on every resource are one contiguous block of `table.cost_packed`.
    `progress(layers done, layers)` is called every 2% of the layers; it may raise to stop
    the DP (a cancelled job's callback does).
    """
    n, names = table.n_layers, table.resources
    n_res = len(names)
    ban = np.array([r in banned for r in names])
    others = ~np.eye(n_res, dtype=bool)  # others[r, q]: q may precede a stage on r
    # excl[i, r]: best prefix 0..i-1 whose last stage is NOT on r (excl[0]: the empty prefix)
    excl_cost = np.full((n + 1, n_res), np.inf)
    excl_thr = np.zeros((n + 1, n_res))
    excl_from = np.zeros((n + 1, n_res), dtype=np.int64)
    excl_cost[0], excl_thr[0] = 0.0, np.inf
    back_first = np.zeros((n, n_res), dtype=np.int64)
    best_cost = np.full(n_res, np.inf)
    best_thr = np.zeros(n_res)
    rows = np.arange(n_res)
    every = max(1, n // 50)
    for j in range(n):
        if progress is not None and j % every == 0:
            progress(j, n)
        cols = table.ending_at(j)
        cost = table.cost_packed[:, cols] + excl_cost[: j + 1].T
        cost[ban] = np.inf
        thr = np.minimum(table.throughput_packed[:, cols], excl_thr[: j + 1].T)
        first, ok = _best_along_last_axis(cost, thr)
        best_cost = np.where(ok, cost[rows, first], np.inf)
        best_thr = np.where(ok, thr[rows, first], 0.0)
        back_first[j] = first
        prev, ok = _best_along_last_axis(
            np.where(others, best_cost[None, :], np.inf), np.where(others, best_thr[None, :], 0.0)
        )
        excl_cost[j + 1] = np.where(ok, best_cost[prev], np.inf)
        excl_thr[j + 1] = np.where(ok, best_thr[prev], 0.0)
        excl_from[j + 1] = prev
    last, ok = _best_along_last_axis(best_cost[None, :], best_thr[None, :])
    if not ok[0]:
        return None
    runs: list[Run] = []
    j, r = n - 1, int(last[0])
    while j >= 0:
        i = int(back_first[j, r])
        runs.append((i, j, names[r]))
        r = int(excl_from[i, r])
        j = i - 1
    runs.reverse()
    return runs


def _best_along_last_axis(cost: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the column of lowest cost; among costs equal to it (relative 1e-9), the
    highest thr. `ok` is False where the row has no finite cost."""
    low = cost.min(axis=1)
    ok = np.isfinite(low)
    with np.errstate(invalid="ignore"):  # inf - inf in rows nothing reaches
        tied = cost - low[:, None] <= np.maximum(REL_TOL * np.abs(cost), 1e-12)
    tied &= np.isfinite(cost)
    return np.argmax(np.where(tied, thr, -np.inf), axis=1), ok
