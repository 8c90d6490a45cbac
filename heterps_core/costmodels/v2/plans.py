"""v2 plans: one assignment provisioned (`evaluate`), a plan built from its stages' units.

`evaluate` tries every server placement; for each, the label DP of `chain_search` picks the
cheapest unit counts of the assignment's stages under the caps and the shared time budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from heterps_core.costmodels import market
from heterps_core.costmodels.base import Options, UnitRun
from heterps_core.costmodels.common import check_assignment, job_length, stages_of
from heterps_core.costmodels.v2.chain_search import allocate
from heterps_core.costmodels.v2.labels import Solution, better_total, turns_rate
from heterps_core.costmodels.v2.server import Choice, Shards, server_choices
from heterps_core.costmodels.v2.terms import StageTerms, stage_options, sync_label
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement, Stage


def evaluate_v2(
    instance: Instance, assignment: Sequence[str], scheduler: str, fixed: Shards | None = None
) -> Plan:
    """The cheapest provisioning of `assignment` over every server placement (with `fixed`:
    that one only)."""
    check_assignment(instance, assignment)
    choices, reasons = server_choices(instance, fixed)
    best: tuple[Solution, Choice] | None = None
    for choice in choices:
        solution, why = solve_choice(instance, choice, assignment)
        if solution is None:
            reasons.append(why)
            continue
        server_cost = choice.server.cost_per_hour if choice.server else 0.0
        total = solution.cost + server_cost
        if best is None or better_total(
            total, solution.throughput,
            best[0].cost + (best[1].server.cost_per_hour if best[1].server else 0.0),
            best[0].throughput,
        ):
            best = (solution, choice)
    if best is None:
        return infeasible_v2(instance, scheduler, "; ".join(dict.fromkeys(reasons)), assignment)
    return build_plan(instance, best[0].runs, best[1].server, scheduler, best[1].counts)


def solve_choice(
    instance: Instance, choice: Choice, assignment: Sequence[str]
) -> tuple[Solution | None, str]:
    """The cheapest unit counts for one assignment and one server placement (exact: the label
    DP over its stages, pruned by the bounds of `chain_search`)."""
    terms = StageTerms(instance, choice.counts, choice.server)
    chain: list[Options] = []
    reasons = []
    for first, last, res in stages_of(assignment):
        opt = stage_options(terms, first, last, res)
        if isinstance(opt, str):
            reasons.append(opt)
            continue
        chain.append(opt)
    if reasons:
        return None, "; ".join(reasons)
    solution = allocate(instance, choice, chain)
    if solution is None:
        return None, _no_provisioning_reason(instance, terms, assignment, choice)
    return solution, ""


def _no_provisioning_reason(
    instance: Instance, terms: StageTerms, assignment: Sequence[str], choice: Choice
) -> str:
    runs = stages_of(assignment)
    used: dict[str, int] = {}
    for first, last, res in runs:
        opt = stage_options(terms, first, last, res)
        if not isinstance(opt, str):
            used[res] = used.get(res, 0) + int(opt.units[0])
    over = [f"stages on {r} need {u} units in total, {choice.counts[r]} exist"
            for r, u in used.items() if u > choice.counts[r]]
    if over:
        return "; ".join(over)
    return (
        f"the stages that take turns ({sync_label(instance)}) cannot reach "
        f"{instance.throughput_target:g} samples/s together with the units available"
    )


def build_plan(
    instance: Instance, runs: Sequence[UnitRun],
    server: ServerPlacement | None, scheduler: str, counts: dict[str, int] | None = None,
) -> Plan:
    """A feasible v2 plan from its stages' unit counts (every number from the terms above)."""
    terms = StageTerms(instance, counts, server)
    stages = []
    total = top = 0.0
    ahead = math.inf
    for first, last, res, units in runs:
        time_s = float(terms.times(first, last, res)[units - 1]) if units <= terms.counts[res] \
            else float(StageTerms(instance, server=server).times(first, last, res)[units - 1])
        rate = units * instance.batch_size / time_s
        runs_ahead = terms.runs_ahead(first, last)
        if runs_ahead:
            ahead = min(ahead, rate)
        else:
            total += 1 / rate
            top = max(top, 1 / rate)
        stages.append(Stage(tuple(range(first, last + 1)), res, units, time_s, rate, runs_ahead))
    turns = float(turns_rate(np.array([total]), np.array([top]), instance.micro_batches)[0])
    throughput = min(ahead, turns, server.throughput if server else math.inf)
    cost = sum(units * instance.resource(res).price_per_hour for _, _, res, units in runs)
    cost += server.cost_per_hour if server else 0.0
    hours, total_cost = job_length(instance, throughput, cost)
    plan = Plan(
        scheduler=scheduler,
        feasible=True,
        assignment=tuple(res for first, last, res, _ in runs for _ in range(first, last + 1)),
        stages=tuple(stages),
        throughput=throughput,
        cost_per_hour=cost,
        hours=hours,
        total_cost=total_cost,
        sync=instance.sync,
        micro_batches=instance.micro_batches,
        parameter_server=server,
        cost_model=2,
    )
    return market.with_markets(instance, plan, terms.memory_gb)


def infeasible_v2(
    instance: Instance, scheduler: str, reason: str, assignment: Sequence[str] | None
) -> Plan:
    return Plan(
        scheduler=scheduler,
        feasible=False,
        assignment=tuple(assignment) if assignment is not None else None,
        reason=reason or "no plan",
        sync=instance.sync,
        micro_batches=instance.micro_batches,
        cost_model=2,
    )


