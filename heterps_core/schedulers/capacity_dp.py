"""The exact DP with availability caps: state (layer prefix, last resource, units used so far).

Only the resources in `capped` (those whose caps some relaxed optimum overran) get a usage
dimension; their usages are packed into one mixed-radix index `u` in 0..prod(count+1)-1.
Values are (cost, min throughput), compared lexicographically as the objective does; both
grow monotonically along a chain, and the state holds everything that constrains the rest of
the plan (the last resource for maximality, the usage for the caps), so the principle of
optimality holds. See docs/schedulers.md for the proof.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heterps_core.costmodel import REL_TOL
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]


def usage_states(table: StageTable, capped: Sequence[str]) -> int:
    size = 1
    for name in capped:
        size *= table.instance.resource(name).count + 1
    return size


def capped_dp(table: StageTable, capped: Sequence[str]) -> list[Run] | None:
    """The optimum with the caps of `capped` enforced (other resources' sums unchecked)."""
    n, names = table.n_layers, table.resources
    n_res = len(names)
    counts = [table.instance.resource(r).count for r in capped]
    strides = [int(np.prod([c + 1 for c in counts[:k]])) for k in range(len(counts))]
    size = usage_states(table, capped)
    usage = np.arange(size)
    digits: dict[int, tuple[np.ndarray, int]] = {}
    for k, name in enumerate(capped):
        digits[names.index(name)] = ((usage // strides[k]) % (counts[k] + 1), strides[k])

    shape = (n, n_res, size)
    best_cost = np.full(shape, np.inf)
    best_thr = np.zeros(shape)
    back_first = np.zeros(shape, dtype=np.int64)
    # excl[j + 1, r]: best prefix 0..j whose last stage is NOT on r; excl[0] = empty prefix
    excl_cost = np.full((n + 1, n_res, size), np.inf)
    excl_thr = np.zeros((n + 1, n_res, size))
    excl_from = np.zeros((n + 1, n_res, size), dtype=np.int64)
    excl_cost[0, :, 0] = 0.0
    excl_thr[0, :, 0] = np.inf
    cols = np.arange(size)

    for j in range(n):
        for r, stages in enumerate(table.by_resource):
            prev_cost = excl_cost[: j + 1, r, :]
            prev_thr = excl_thr[: j + 1, r, :]
            stage_cost = stages.cost[: j + 1, j][:, None]
            stage_thr = stages.throughput[: j + 1, j][:, None]
            if r in digits:
                # Arriving at usage u through a stage of k units means coming from u - k*stride.
                dig, stride = digits[r]
                units = stages.units[: j + 1, j][:, None]
                valid = dig[None, :] >= units
                src = np.where(valid, usage[None, :] - units * stride, 0)
                prev_cost = np.where(valid, np.take_along_axis(prev_cost, src, axis=1), np.inf)
                prev_thr = np.where(valid, np.take_along_axis(prev_thr, src, axis=1), 0.0)
            cost = prev_cost + stage_cost
            thr = np.minimum(prev_thr, stage_thr)
            firsts, ok = _best_along_first_axis(cost, thr)
            best_cost[j, r] = np.where(ok, cost[firsts, cols], np.inf)
            best_thr[j, r] = np.where(ok, thr[firsts, cols], 0.0)
            back_first[j, r] = firsts
        for r in range(n_res):
            others = np.array([q for q in range(n_res) if q != r], dtype=np.int64)
            if others.size == 0:
                continue
            q, ok = _best_along_first_axis(best_cost[j, others], best_thr[j, others])
            excl_cost[j + 1, r] = np.where(ok, best_cost[j, others[q], cols], np.inf)
            excl_thr[j + 1, r] = np.where(ok, best_thr[j, others[q], cols], 0.0)
            excl_from[j + 1, r] = others[q]

    final_cost = best_cost[n - 1].reshape(-1)
    final_thr = best_thr[n - 1].reshape(-1)
    pick, ok = _best_along_first_axis(final_cost[:, None], final_thr[:, None])
    if not ok[0]:
        return None
    last_r, u = divmod(int(pick[0]), size)
    runs: list[Run] = []
    j, r = n - 1, last_r
    while j >= 0:
        i = int(back_first[j, r, u])
        runs.append((i, j, names[r]))
        if r in digits:
            u -= int(table.by_resource[r].units[i, j]) * digits[r][1]
        if i > 0:
            r = int(excl_from[i, r, u])
        j = i - 1
    runs.reverse()
    return runs


def _best_along_first_axis(cost: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the row of lowest cost, ties (relative 1e-9) to the highest throughput."""
    low = cost.min(axis=0)
    ok = np.isfinite(low)
    with np.errstate(invalid="ignore"):  # inf - inf where nothing reaches a state
        tied = cost - low[None, :] <= np.maximum(REL_TOL * np.abs(cost), 1e-12)
    tied &= np.isfinite(cost)
    pick = np.argmax(np.where(tied, thr, -np.inf), axis=0)
    return pick, ok
