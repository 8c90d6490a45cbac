"""The integer programme behind `exact` for caps too large for the capacity DP.

Binary variable per candidate stage; a path through the layer boundaries 0..L (flow
constraints), at most one stage on a resource touching each inner boundary (stages are
maximal runs), and the per-resource unit sums within `count`. SciPy's HiGHS `milp` solves it
with a zero relative gap; a second solve maximises the plan's minimum throughput among plans
within 1e-9 of the optimal cost. Candidates whose cheapest possible plan (caps ignored) costs
more than a known capped plan are dropped first: they cannot be in an optimum.

The budget: HiGHS's `time_limit` bounds its run time, which HiGHS measures on the wall clock
(its C API: `Highs_getRunTime`, "the cumulative wall-clock time spent in Highs_run"); it has
no CPU-time limit (its work limits, `mip_max_nodes` and the like, do not translate from
seconds), and SciPy's `milp` has no callback to stop it. `exact`'s budget counts CPU seconds
(heterps_core/budget.py). Each solve gets `Deadline.wall_limit_s()`: the CPU seconds left
divided by the share of a core the solve has had so far, about the wall time that CPU takes
at the current load. So a steady load does not cut the programme short, but a load that
starts or stops during it moves where it stops; the plan's gap note says it stopped either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heterps_core.budget import Deadline
from heterps_core.costmodels.common import REL_TOL
from heterps_core.errors import SchedulerError
from heterps_core.schedulers.chain_dp import uncapped_optimum
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]


@dataclass(frozen=True)
class CappedResult:
    runs: list[Run] | None
    proven: bool
    lower: float = 0.0  # HiGHS's certified bound on the optimal cost


def capped_optimum(
    table: StageTable, deadline: Deadline | None = None, keep: np.ndarray | None = None
) -> CappedResult:
    """ILP over candidate stages: a path through layer boundaries 0..L, maximal runs, caps.

    `keep[r, last, first]` restricts the candidates (exact_bounds.py); by default stages
    that no plan cheaper than a known capped one could contain are dropped here. With
    `deadline`, each HiGHS solve gets the wall-time equivalent of the CPU left (module doc).
    """
    # SciPy's optimiser takes ~1 s to import; only this rare path needs it.
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    if keep is not None:
        cands = _kept(table, keep)
    else:
        cands = _candidates(table, capped_upper_bound(table))
    if not cands:
        return CappedResult(None, True)
    n, n_res = table.n_layers, len(table.resources)
    first = np.array([c[0] for c in cands])
    last = np.array([c[1] for c in cands])
    res = np.array([c[2] for c in cands])
    units = np.array([c[3] for c in cands], dtype=float)
    cost = np.array([c[4] for c in cands])
    thr = np.array([c[5] for c in cands])
    m = len(cands)
    cols = np.arange(m)

    rows: list[np.ndarray] = []
    cidx: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    # flow: at boundary b, stages starting there minus stages ending there = 1 at b=0, else 0
    rows += [first, last + 1]
    cidx += [cols, cols]
    vals += [np.ones(m), -np.ones(m)]
    lo += [1.0] + [0.0] * (n - 1)
    hi += [1.0] + [0.0] * (n - 1)
    keep_flow = np.concatenate([first, last + 1]) < n  # boundary L is implied
    # maximal runs: at inner boundary b, at most one stage on r touches b
    base = n
    adj_end = last + 1
    inner_end = adj_end < n
    rows += [base + (adj_end[inner_end] - 1) * n_res + res[inner_end]]
    cidx += [cols[inner_end]]
    vals += [np.ones(int(inner_end.sum()))]
    inner_start = first > 0
    rows += [base + (first[inner_start] - 1) * n_res + res[inner_start]]
    cidx += [cols[inner_start]]
    vals += [np.ones(int(inner_start.sum()))]
    lo += [0.0] * ((n - 1) * n_res)
    hi += [1.0] * ((n - 1) * n_res)
    # availability caps
    base += (n - 1) * n_res
    rows += [base + res]
    cidx += [cols]
    vals += [units]
    lo += [0.0] * n_res
    hi += [float(table.instance.resource(r).count) for r in table.resources]

    row = np.concatenate(rows)
    col = np.concatenate(cidx)
    val = np.concatenate(vals)
    flow_len = 2 * m
    mask = np.ones(len(row), dtype=bool)
    mask[:flow_len] = keep_flow
    matrix = coo_matrix((val[mask], (row[mask], col[mask])), shape=(len(lo), m)).tocsr()
    constraints = [LinearConstraint(matrix, np.array(lo), np.array(hi))]

    # Scale so that HiGHS's absolute gap (1e-6) is far below a 1e-9 relative cost difference.
    scale = 1e3 / float(cost.min())
    options: dict[str, float | bool] = {"mip_rel_gap": 0.0, "presolve": True}
    if deadline is not None:
        options["time_limit"] = deadline.wall_limit_s()
    integrality = np.ones(m)
    first_solve = milp(
        cost * scale, constraints=constraints, integrality=integrality,
        bounds=Bounds(0, 1), options=options,
    )
    dual = getattr(first_solve, "mip_dual_bound", None)
    lower = float(dual) / scale if dual is not None and np.isfinite(dual) else 0.0
    if first_solve.x is None:
        if first_solve.status == 2:  # infeasible
            return CappedResult(None, True)
        if first_solve.status == 1:  # time limit before any plan was found
            return CappedResult(None, False, lower)
        raise SchedulerError(f"exact: integer programme failed ({first_solve.message})")
    chosen = first_solve.x > 0.5
    best = float(cost[chosen].sum())
    if first_solve.status != 0:  # out of time: the incumbent and HiGHS's bound
        return CappedResult(_runs(table, cands, chosen), False, lower)
    if deadline is not None:
        if deadline.passed():
            return CappedResult(_runs(table, cands, chosen), False, best)
        options["time_limit"] = deadline.wall_limit_s()

    # Tie-break: among plans within 1e-9 of the optimum, maximise the minimum throughput t.
    # t <= thr_c / top + (1 - x_c) for every candidate keeps t below every chosen stage.
    top = float(thr.max())
    tie_matrix = coo_matrix(
        (np.concatenate([np.ones(m), np.ones(m)]),
         (np.concatenate([cols, cols]), np.concatenate([cols, np.full(m, m)]))),
        shape=(m, m + 1),
    ).tocsr()
    pad = coo_matrix((matrix.data, (matrix.tocoo().row, matrix.tocoo().col)),
                     shape=(matrix.shape[0], m + 1)).tocsr()
    budget_row = np.append(cost * scale, 0.0).reshape(1, -1)
    tie_constraints = [
        LinearConstraint(pad, np.array(lo), np.array(hi)),
        LinearConstraint(tie_matrix, -np.inf, thr / top + 1.0),
        LinearConstraint(budget_row, -np.inf, best * scale * (1 + REL_TOL) + 1e-9),
    ]
    objective = np.zeros(m + 1)
    objective[m] = -1.0
    second = milp(
        objective, constraints=tie_constraints, integrality=np.append(integrality, 0),
        bounds=Bounds(np.zeros(m + 1), np.append(np.ones(m), 1.0)), options=options,
    )
    proven = second.status == 0
    if second.x is not None:
        chosen = second.x[:m] > 0.5
    # The cost is proven either way; `proven` is False if the tie-break was cut short.
    return CappedResult(_runs(table, cands, chosen), proven, best)


def _runs(
    table: StageTable, cands: list[tuple[int, int, int, int, float, float]], chosen: np.ndarray
) -> list[Run]:
    picked = sorted((cands[c] for c in np.flatnonzero(chosen)), key=lambda c: c[0])
    return [(c[0], c[1], table.resources[c[2]]) for c in picked]


def capped_upper_bound(table: StageTable) -> float:
    """The cost of some plan that fits the caps (inf if none is found quickly).

    Re-run the DP with the resources whose caps it overran banned, until it fits or fails.
    """
    banned: set[str] = set()
    while len(banned) < len(table.resources):
        runs = uncapped_optimum(table, frozenset(banned))
        if runs is None:
            return np.inf
        used: dict[str, int] = {}
        cost = 0.0
        for first, last, res in runs:
            units, stage_cost, _ = table.stage(table.resources.index(res), first, last)
            used[res] = used.get(res, 0) + units
            cost += stage_cost
        over = {r for r, u in used.items() if u > table.instance.resource(r).count}
        if not over:
            return cost
        banned |= over
    return np.inf


def _kept(table: StageTable, keep: np.ndarray) -> list[tuple[int, int, int, int, float, float]]:
    out: list[tuple[int, int, int, int, float, float]] = []
    for r in range(len(table.resources)):
        lasts, firsts = np.nonzero(keep[r] & (table.units_by_last[r] > 0))
        for j, i in zip(lasts.tolist(), firsts.tolist(), strict=True):
            out.append(
                (i, j, r, int(table.units_by_last[r, j, i]), float(table.cost_by_last[r, j, i]),
                 float(table.throughput_by_last[r, j, i]))
            )
    return out


def _candidates(
    table: StageTable, upper_bound: float = np.inf
) -> list[tuple[int, int, int, int, float, float]]:
    """Candidate stages that some plan no dearer than `upper_bound` could contain."""
    out: list[tuple[int, int, int, int, float, float]] = []
    bounds = stage_lower_bounds(table) if np.isfinite(upper_bound) else None
    limit = upper_bound * (1 + REL_TOL) + 1e-12
    for r, stages in enumerate(table.by_resource):
        useful = stages.units > 0
        if bounds is not None:
            useful &= bounds[r] <= limit
        firsts, lasts = np.nonzero(useful)
        for i, j in zip(firsts.tolist(), lasts.tolist(), strict=True):
            out.append(
                (i, j, r, int(stages.units[i, j]), float(stages.cost[i, j]),
                 float(stages.throughput[i, j]))
            )
    return out


def stage_lower_bounds(table: StageTable) -> list[np.ndarray]:
    """Per resource, [i, j]: the cheapest cost of any plan (caps ignored) using stage i..j on r.

    Cheapest prefix ending before i not on r + the stage + cheapest suffix after j not on r;
    both come from cost-only DPs, so the bound is a valid relaxation.
    """
    n, n_res = table.n_layers, len(table.resources)
    costs = [s.cost for s in table.by_resource]
    # pre[i, r]: cheapest prefix over layers 0..i-1 whose last stage is not on r (pre[0] = 0)
    pre_best = np.full((n + 1, n_res), np.inf)
    pre = np.full((n + 1, n_res), np.inf)
    pre[0] = 0.0
    for j in range(n):
        for r in range(n_res):
            pre_best[j + 1, r] = np.min(pre[: j + 1, r] + costs[r][: j + 1, j])
        pre[j + 1] = _min_of_others(pre_best[j + 1])
    # suf[j, r]: cheapest suffix over layers j..n-1 whose first stage is not on r (suf[n] = 0)
    suf_best = np.full((n + 1, n_res), np.inf)
    suf = np.full((n + 1, n_res), np.inf)
    suf[n] = 0.0
    for i in range(n - 1, -1, -1):
        for r in range(n_res):
            suf_best[i, r] = np.min(costs[r][i, i:] + suf[i + 1 :, r])
        suf[i] = _min_of_others(suf_best[i])
    return [
        pre[:n, r][:, None] + costs[r] + suf[1:, r][None, :] for r in range(n_res)
    ]


def _min_of_others(values: np.ndarray) -> np.ndarray:
    """out[r] = min of values over every index but r."""
    out = np.full_like(values, np.inf)
    for r in range(values.size):
        if values.size > 1:
            out[r] = np.min(np.delete(values, r))
    return out
