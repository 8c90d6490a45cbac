"""The spec's cost model (v1, ../shared/spec/cost-model.md §2-§4): each stage gets the fewest
units that meet the target and hold its memory, on its own; the plan costs the sum of its
stages and runs at the rate of its slowest one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heterps_core.costmodels import market
from heterps_core.costmodels.base import CostModel, Options, UnitRun
from heterps_core.costmodels.chain import ChainCosts
from heterps_core.costmodels.common import check_assignment, job_length, stages_of
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement, Stage


class StagewiseModel(CostModel):
    version = 1
    stagewise = True

    def evaluate(self, assignment: Sequence[str], scheduler: str = "evaluate") -> Plan:
        instance, costs = self.instance, self.chain
        check_assignment(instance, assignment)
        stages: list[Stage] = []
        reasons: list[str] = []
        used: dict[str, int] = {}
        for first, last, res in stages_of(assignment):
            layers = tuple(range(first, last + 1))
            if not costs.runs_on(first, last, res):
                reasons.append(costs.cannot_run(first, last, res))
                stages.append(Stage(layers, res, None, None, None))
                continue
            shape = costs.shape(first, last, res)
            prov = costs.provision(shape)
            if prov.units is None:
                reasons.append(prov.reason or "cannot be provisioned")
                stages.append(Stage(layers, res, None, None, None))
                continue
            used[res] = used.get(res, 0) + prov.units
            stages.append(
                Stage(
                    layers,
                    res,
                    prov.units,
                    shape.time_per_batch(prov.units),
                    shape.throughput(prov.units, instance.batch_size),
                )
            )
        for res, units in used.items():
            count = instance.resource(res).count
            if units > count:
                reasons.append(f"stages on {res} need {units} units in total, {count} exist")
        if reasons:
            return Plan(
                scheduler=scheduler,
                feasible=False,
                assignment=tuple(assignment),
                stages=tuple(stages),
                reason="; ".join(reasons),
            )
        return feasible_plan(instance, tuple(assignment), tuple(stages), scheduler,
                             self.memory_split)

    def options(self, first: int, last: int, resource: str) -> Options | str:
        found = self.stage(first, last, resource)
        if isinstance(found, str):
            return found
        units = found.units
        time_s = self.chain.shape(first, last, resource).time_per_batch(units)
        return Options(first, last, resource, True, np.array([units]),
                       np.array([found.cost_per_hour]), np.array([time_s]),
                       np.array([time_s / (units * self.instance.batch_size)]))

    def price(self, runs: Sequence[UnitRun], server: ServerPlacement | None = None,
              scheduler: str = "evaluate") -> Plan:
        stages = []
        for first, last, res, units in runs:
            shape = self.chain.shape(first, last, res)
            stages.append(Stage(tuple(range(first, last + 1)), res, units,
                                shape.time_per_batch(units),
                                shape.throughput(units, self.instance.batch_size)))
        assignment = tuple(res for first, last, res, _ in runs for _ in range(first, last + 1))
        return feasible_plan(self.instance, assignment, tuple(stages), scheduler,
                             self.memory_split)

    def row_wait_s(self, first: int, last: int, resource: str,
                   server: ServerPlacement | None) -> float:
        return 0.0  # no parameter server: tables stay with their stage

    def memory_split(self, first: int, last: int) -> tuple[float, float]:
        return self.chain.memory_split(first, last)


def feasible_plan(
    instance: Instance, assignment: tuple[str, ...], stages: tuple[Stage, ...], scheduler: str,
    memory: market.MemorySplit | None = None,
) -> Plan:
    """Totals (§4) for stages that are all provisioned (at their markets, when the instance
    has any; `memory`: the stages' memory split, from the instance when not given)."""
    cost = sum((s.units or 0) * instance.resource(s.resource).price_per_hour for s in stages)
    throughput = min(s.throughput or 0.0 for s in stages)
    hours, total = job_length(instance, throughput, cost)
    plan = Plan(
        scheduler=scheduler,
        feasible=True,
        assignment=assignment,
        stages=stages,
        throughput=throughput,
        cost_per_hour=cost,
        hours=hours,
        total_cost=total,
    )
    return market.with_markets(instance, plan, memory or ChainCosts(instance).memory_split)
