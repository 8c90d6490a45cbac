"""`exact`: the provably cheapest plan under the cost model (method and proof: docs/schedulers.md).

1. `chain_dp`: a DP over (layer prefix, resource of the last stage), which checks each
   stage against its resource's `count` but not the sum over a resource's stages.
2. If that plan fits every cap, it is optimal (the capped plans are a subset of the relaxed
   ones). Otherwise the resources it overran get a usage dimension (`capacity_dp`) and the
   DP runs again, adding overrun resources until the answer fits: each round solves a
   relaxation exactly, so the first answer that fits every cap is the optimum.
3. When the usage dimension would be too large, an integer programme (`exact_ilp`) with all
   the caps takes over.
"""

from __future__ import annotations

from heterps_core.costmodel import evaluate, infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.capacity_dp import capped_dp, usage_states
from heterps_core.schedulers.chain_dp import Run, uncapped_optimum
from heterps_core.schedulers.exact_ilp import capped_optimum
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.stagetable import StageTable

# Largest layers x resources x usage states the capacity DP may allocate (6 arrays of this).
MAX_DP_CELLS = 4_000_000


@register
class ExactScheduler(Scheduler):
    name = "exact"
    summary = "Provably cheapest plan: DP over (prefix, last resource[, units used])."

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
    n_res = len(table.resources)
    capped: list[str] = []
    first_failure = ""
    for round_no in range(n_res + 1):
        report(Progress(round_no, n_res + 1, _round_message(capped)))
        if capped and table.n_layers * n_res * usage_states(table, capped) > MAX_DP_CELLS:
            return _ilp_plan(table, budget_s, first_failure)
        runs = capped_dp(table, capped) if capped else uncapped_optimum(table)
        if runs is None:
            if not capped:
                return infeasible_plan("exact", uncovered_reason(table))
            return infeasible_plan(
                "exact", "no plan fits the availability caps; " + first_failure
            )
        plan = evaluate(instance, _assignment(runs, table.n_layers), "exact", costs=table.costs)
        overrun = _overrun(table, runs)
        if not overrun:
            report(Progress(n_res + 1, n_res + 1, "optimal"))
            return plan
        first_failure = first_failure or f"the cheapest plan without caps fails: {plan.reason}"
        capped = sorted(set(capped) | overrun)
    raise AssertionError("every resource capped, yet a cap was overrun")


def _round_message(capped: list[str]) -> str:
    if not capped:
        return "dynamic programme over (prefix, last resource)"
    return "availability caps bind: tracking units of " + ", ".join(capped)


def _overrun(table: StageTable, runs: list[Run]) -> set[str]:
    used: dict[str, int] = {}
    for first, last, res in runs:
        units = int(table.by_resource[table.resources.index(res)].units[first, last])
        used[res] = used.get(res, 0) + units
    return {r for r, u in used.items() if u > table.instance.resource(r).count}


def _ilp_plan(table: StageTable, budget_s: float | None, first_failure: str) -> Plan:
    result = capped_optimum(table, budget_s)
    if result.runs is None:
        return infeasible_plan("exact", "no plan fits the availability caps; " + first_failure)
    plan = evaluate(
        table.instance, _assignment(result.runs, table.n_layers), "exact", costs=table.costs
    )
    if not result.proven:
        plan = plan.with_notes("time budget reached: best plan found, optimality not proven")
    return plan


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
