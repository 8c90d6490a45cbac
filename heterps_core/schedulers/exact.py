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

import math

from heterps_core.budget import BudgetReached, Deadline, budget_reached, passed
from heterps_core.costmodel import REL_TOL, evaluate, infeasible_plan
from heterps_core.costmodels import cost_model_for
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.capacity_dp import (
    capped_dp,
    dp_bytes,
    dp_work,
    usage_states,
)
from heterps_core.schedulers.chain_dp import Run, uncapped_optimum
from heterps_core.schedulers.exact_bounds import CapBounds, cap_bounds
from heterps_core.schedulers.exact_caps import exact_within_caps
from heterps_core.schedulers.exact_ilp import capped_optimum
from heterps_core.schedulers.exact_v2 import exact_v2
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.stagetable import StageTable

# `heterps plan` and the web give `exact` this budget unless told otherwise: CPU seconds of
# the solving thread (heterps_core/budget.py), so a busy machine does not cut a solve short.
# When it runs out the plan is the best one found, labelled with its certified gap (never
# called optimal).
DEFAULT_BUDGET_S = 60.0
# The capacity DP runs when its work (kept stages x usage states) and memory stay below
# these; beyond them the integer programme is faster (measured: docs/benchmarks/planners.md).
MAX_DP_WORK = 3e8
MAX_DP_BYTES = 1.5e9


@register
class ExactScheduler(Scheduler):
    name = "exact"
    summary = "Provably cheapest plan: DP over (prefix, last resource[, units used])."
    honours_caps = True

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        budget = DEFAULT_BUDGET_S if self.budget_s is None else self.budget_s
        optimum = exact_plan(instance, budget_s=budget, progress=progress)
        if not self.caps.any:
            return optimum
        return exact_within_caps(
            instance, self.caps, optimum,
            lambda table: exact_plan(instance, table=table, budget_s=budget), progress)


def exact_plan(
    instance: Instance,
    table: StageTable | None = None,
    budget_s: float | None = None,
    progress: ProgressCallback | None = None,
) -> Plan:
    """The optimum of `instance` (or an infeasible plan whose reason says what blocks it).

    With `budget_s` CPU seconds (None or inf: no limit), a solve that runs out of budget
    returns the best plan found with a note giving its certified gap, never a plan called
    optimal.
    """
    if not cost_model_for(instance).stagewise:
        # units chosen per plan, not per stage: the label DP over (prefix, last resource)
        # per server placement (exact_v2.py)
        return exact_v2(instance, budget_s=budget_s, progress=progress)
    deadline = Deadline.after(budget_s)
    report = _forward_only(progress or (lambda _: None))
    report(Progress(0, 1, "pricing every candidate stage"))
    table = table or StageTable(instance)
    message = "dynamic programme over (prefix, last resource)"
    report(Progress(0, 1, message))
    # Every loop below reports as it goes: the report is also the cancellation hook (a
    # cancelled job's callback raises WorkCancelled), so a huge instance stops mid-DP.
    runs = uncapped_optimum(table, progress=lambda done, total: report(
        Progress(done, total, message)))
    if runs is None:
        return infeasible_plan("exact", uncovered_reason(table))
    plan = evaluate(instance, _assignment(runs, table.n_layers), "exact", costs=table.costs)
    overrun = _overrun(table, runs)
    if not overrun:
        report(Progress(1, 1, "optimal"))
        return plan
    first_failure = f"the cheapest plan without caps fails: {plan.reason}"
    report(Progress(0, 1, "availability caps bind: bounding the capped optimum"))
    bounds = cap_bounds(table, deadline=deadline)
    bounds.lower = max(bounds.lower, _cost(table, runs))
    report(_bound_progress(bounds, 0, 1, "bounds"))
    capped = sorted(overrun)
    capped = _tighten(table, bounds, capped, deadline, report)
    while True:
        if passed(deadline):
            return _out_of_time(table, bounds, budget_s, first_failure)
        work, size = dp_work(table, capped, bounds.keep), dp_bytes(table, capped)
        if work > MAX_DP_WORK or size > MAX_DP_BYTES:
            return _ilp_plan(table, bounds, deadline, budget_s, first_failure, report)
        message = _round_message(table, capped)

        def dp_progress(done: int, total: int, message: str = message) -> None:
            report(_bound_progress(bounds, done, total, message))

        try:
            runs = capped_dp(table, capped, bounds.keep, deadline, dp_progress)
        except BudgetReached:
            return _out_of_time(table, bounds, budget_s, first_failure)
        if runs is None:
            return infeasible_plan(
                "exact", "no plan fits the availability caps; " + first_failure
            )
        # This round solved a relaxation exactly: its cost is a lower bound too.
        bounds.lower = max(bounds.lower, _cost(table, runs))
        overrun = _overrun(table, runs)
        if not overrun:
            report(Progress(1, 1, "optimal"))
            return evaluate(
                instance, _assignment(runs, table.n_layers), "exact", costs=table.costs
            )
        capped = sorted(set(capped) | overrun)


def _tighten(
    table: StageTable,
    bounds: CapBounds,
    capped: list[str],
    deadline: Deadline | None,
    report: ProgressCallback,
) -> list[str]:
    """Find a good plan that fits the caps with capped DPs over the most promising stages
    only (cheap); its cost lowers the upper bound, so the exact DP keeps fewer stages.
    Returns the resources the searches found binding (the exact DP tracks them from the
    start)."""

    def dp_progress(done: int, total: int) -> None:
        report(_bound_progress(bounds, done, total, "searching the most promising stages"))

    for fraction in (0.05, 0.25):
        if bounds.gap <= 1e-3:
            break
        keep = bounds.promising(fraction)
        while dp_work(table, capped, keep) <= MAX_DP_WORK / 10:
            try:
                runs = capped_dp(table, capped, keep, deadline, dp_progress)
            except BudgetReached:
                return capped
            if runs is None:
                break
            overrun = _overrun(table, runs)
            if not overrun:
                bounds.offer(runs, _cost(table, runs))
                report(_bound_progress(bounds, 0, 1, "searching the most promising stages"))
                break
            capped = sorted(set(capped) | overrun)
    return capped


def _forward_only(progress: ProgressCallback) -> ProgressCallback:
    """Progress that never goes back (the web draws it as one bar): each report of a
    fraction f moves the bar a share f of the way from where the current phase began,
    and a phase that starts again at 0 (the next capacity-DP round) begins where the last
    one left off, taking half of what remains."""
    state = {"start": 0.0, "span": 0.5, "shown": 0.0}

    def report(p: Progress) -> None:
        if p.fraction >= 1 and p.message == "optimal":
            shown = 1.0
        else:
            if p.fraction == 0 and state["shown"] > state["start"]:
                state["start"] = state["shown"]  # a new phase
                state["span"] = (1 - state["start"]) / 2
            shown = max(state["shown"], state["start"] + state["span"] * p.fraction)
        state["shown"] = shown
        progress(Progress(round(1000 * shown), 1000, p.message, p.metrics))

    return report


def _bound_progress(bounds: CapBounds, done: int, total: int, message: str) -> Progress:
    metrics: dict[str, float] = {"lower_bound_per_hour": bounds.lower}
    text = f"{message}; no plan below ${bounds.lower:,.3f}/h"
    if math.isfinite(bounds.upper):
        metrics["best_per_hour"] = bounds.upper
        metrics["gap"] = bounds.gap
        text += f", best found ${bounds.upper:,.3f}/h (gap {100 * bounds.gap:.2f}%)"
    return Progress(done, total, text, metrics)


def _out_of_time(
    table: StageTable, bounds: CapBounds, budget_s: float | None, first_failure: str
) -> Plan:
    """The best plan known when the budget ran out, labelled with its certified gap."""
    budget = budget_reached(budget_s)
    if bounds.best is None:
        return infeasible_plan(
            "exact",
            f"{budget} before any plan fitting the availability caps was found "
            f"(not proven infeasible; {first_failure}); raise --budget-s",
        )
    plan = evaluate(
        table.instance, _assignment(bounds.best, table.n_layers), "exact", costs=table.costs
    )
    return plan.with_notes(_gap_note(budget, bounds))


def _gap_note(why: str, bounds: CapBounds) -> str:
    if bounds.upper <= bounds.lower * (1 + REL_TOL):
        return (
            f"{why}: the cost ${bounds.upper:,.3f}/h is optimal, but a plan of the same cost "
            "with a higher throughput was not ruled out"
        )
    return (
        f"not proven optimal, gap {100 * bounds.gap:.2f}%: {why}; this plan costs "
        f"${bounds.upper:,.3f}/h and no plan that fits the caps costs less than "
        f"${bounds.lower:,.3f}/h"
    )


def _round_message(table: StageTable, capped: list[str]) -> str:
    states = usage_states(table, capped)
    return f"availability caps bind: tracking units of {', '.join(capped)} ({states:,} states)"


def _overrun(table: StageTable, runs: list[Run]) -> set[str]:
    used: dict[str, int] = {}
    for first, last, res in runs:
        units = table.stage(table.resources.index(res), first, last)[0]
        used[res] = used.get(res, 0) + units
    return {r for r, u in used.items() if u > table.instance.resource(r).count}


def _cost(table: StageTable, runs: list[Run]) -> float:
    return sum(table.stage(table.resources.index(res), first, last)[1] for first, last, res in runs)


def _ilp_plan(
    table: StageTable,
    bounds: CapBounds,
    deadline: Deadline | None,
    budget_s: float | None,
    first_failure: str,
    report: ProgressCallback,
) -> Plan:
    report(_bound_progress(bounds, 0, 1, "integer programme over the kept stages (HiGHS)"))
    result = capped_optimum(table, deadline, bounds.keep)
    if result.runs is None and result.proven:
        return infeasible_plan("exact", "no plan fits the availability caps; " + first_failure)
    if result.proven and result.runs is not None:
        report(Progress(1, 1, "optimal"))
        return evaluate(
            table.instance, _assignment(result.runs, table.n_layers), "exact",
            costs=table.costs,
        )
    # Out of time: the better of the ILP's incumbent and the bounds' plan, with the gap.
    bounds.lower = max(bounds.lower, result.lower)
    if result.runs is not None and _cost(table, result.runs) < bounds.upper:
        bounds.best, bounds.upper = result.runs, _cost(table, result.runs)
    return _out_of_time(table, bounds, budget_s, first_failure)


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
