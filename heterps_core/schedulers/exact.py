"""`exact`: the provably cheapest plan under the cost model (method and proof: docs/schedulers.md).

1. A dynamic programme over (layer prefix, resource of the last stage) finds the optimum when
   each resource's stages are provisioned independently, i.e. ignoring that the stages on one
   resource share its `count`. Every single stage already respects `count` on its own.
2. If that plan also fits the availability caps it is optimal for the real problem too (the
   capped plans are a subset). Otherwise an integer programme over the candidate stages
   (SciPy's HiGHS `milp`) adds the per-resource sums, then a second solve breaks cost ties
   by throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from heterps_core.costmodel import REL_TOL, evaluate, infeasible_plan
from heterps_core.errors import SchedulerError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.stagetable import StageTable

Run = tuple[int, int, str]  # (first layer, last layer, resource)


@register
class ExactScheduler(Scheduler):
    name = "exact"
    summary = "Provably cheapest plan: DP over (prefix, last resource), ILP when caps bind."

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        return exact_plan(instance, budget_s=self.budget_s, progress=progress)


def exact_plan(
    instance: Instance,
    table: StageTable | None = None,
    budget_s: float | None = None,
    progress: ProgressCallback | None = None,
) -> Plan:
    """The optimum of `instance` (or an infeasible plan whose reason says what blocks it)."""
    table = table or StageTable(instance)
    report = progress or (lambda _: None)
    report(Progress(0, 2, "dynamic programme over (prefix, last resource)"))
    runs = uncapped_optimum(table)
    if runs is None:
        return infeasible_plan("exact", uncovered_reason(table))
    plan = evaluate(instance, _assignment(runs, table.n_layers), "exact", costs=table.costs)
    if plan.feasible:
        report(Progress(2, 2, "optimal (availability caps do not bind)"))
        return plan
    report(Progress(1, 2, "availability caps bind: integer programme"))
    capped = capped_optimum(table, budget_s)
    if capped.runs is None:
        return infeasible_plan(
            "exact",
            "no plan fits the availability caps; the cheapest plan without caps fails: "
            + (plan.reason or ""),
        )
    result = evaluate(
        instance, _assignment(capped.runs, table.n_layers), "exact", costs=table.costs
    )
    report(Progress(2, 2, "optimal (integer programme)" if capped.proven else "time limit"))
    if not capped.proven:
        result = result.with_notes("time budget reached: best plan found, optimality not proven")
    return result


def uncapped_optimum(table: StageTable) -> list[Run] | None:
    """The DP. Values are (cost, min throughput) compared as the objective does."""
    n, names = table.n_layers, table.resources
    n_res = len(names)
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
            cost = prev_cost + stages.cost[: j + 1, j]
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


@dataclass(frozen=True)
class CappedResult:
    runs: list[Run] | None
    proven: bool


def capped_optimum(table: StageTable, budget_s: float | None = None) -> CappedResult:
    """ILP over candidate stages: a path through layer boundaries 0..L, maximal runs, caps."""
    cands = _candidates(table)
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
    if budget_s is not None:
        options["time_limit"] = budget_s
    integrality = np.ones(m)
    first_solve = milp(
        cost * scale, constraints=constraints, integrality=integrality,
        bounds=Bounds(0, 1), options=options,
    )
    if first_solve.x is None:
        if first_solve.status == 2:  # infeasible
            return CappedResult(None, True)
        raise SchedulerError(f"exact: integer programme failed ({first_solve.message})")
    proven = first_solve.status == 0
    chosen = first_solve.x > 0.5
    best = float(cost[chosen].sum())

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
    if second.x is not None:
        proven = proven and second.status == 0
        chosen = second.x[:m] > 0.5
    picked = [cands[c] for c in np.flatnonzero(chosen)]
    picked.sort(key=lambda c: c[0])
    return CappedResult([(c[0], c[1], table.resources[c[2]]) for c in picked], proven)


def _candidates(table: StageTable) -> list[tuple[int, int, int, int, float, float]]:
    out: list[tuple[int, int, int, int, float, float]] = []
    for r, stages in enumerate(table.by_resource):
        firsts, lasts = np.nonzero(stages.units)
        for i, j in zip(firsts.tolist(), lasts.tolist(), strict=True):
            out.append(
                (i, j, r, int(stages.units[i, j]), float(stages.cost[i, j]),
                 float(stages.throughput[i, j]))
            )
    return out


def uncovered_reason(table: StageTable) -> str:
    """Why no plan exists: the first layer that no candidate stage can hold, with each cause."""
    inst = table.instance
    for layer_idx, layer in enumerate(inst.layers):
        covered = any(
            (stages.units[: layer_idx + 1, layer_idx:] > 0).any() for stages in table.by_resource
        )
        if covered:
            continue
        causes = []
        for res in inst.resource_names:
            if not layer.runs_on(res):
                continue
            prov = table.costs.provision(table.costs.shape(layer_idx, layer_idx, res))
            causes.append(prov.reason or f"cannot be provisioned on {res}")
        if not causes:
            return f"no resource can run layer {layer.name}"
        return f"no resource can hold layer {layer.name}: " + "; ".join(causes)
    return (
        f"no chain of stages meets {inst.throughput_target:g} samples/s "
        "(every layer fits somewhere, but no combination does)"
    )


def _assignment(runs: list[Run], n_layers: int) -> list[str]:
    assignment = [""] * n_layers
    for first, last, res in runs:
        for i in range(first, last + 1):
            assignment[i] = res
    return assignment
