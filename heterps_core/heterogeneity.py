"""Does heterogeneity pay? A plan's cost against the best homogeneous plan, and why.

A homogeneous plan runs every stage *and* the parameter server on one resource type: the
instance restricted to that type (its compute figures, its count, the server role on it
alone). Where the instance has a server role, a type that may not host the server has no
homogeneous plan: the instance's tables live on the shards, and planning it without them
would price a plan the instance itself does not allow. The single-type plans are thus plans
of the same instance, so the exact optimum is never dearer than the best of them. Each is
the exact optimum of its restricted instance, priced by the same cost model and solver as
the plan it is compared with, at the same target and sync mode.

`ratio` = the best homogeneous plan's $/h over the plan's: 1.6 means the plan is 1.6x
cheaper than running on any single type; 1.0 for a plan that is itself homogeneous and
optimal; None when no single type can meet the target (heterogeneity is then necessary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from heterps_core.costmodels import CostModel, cost_model_for
from heterps_core.costmodels.common import infeasible_plan, is_better
from heterps_core.costmodels.v2.server import server_need
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement, Stage

SCHEDULER = "homogeneous"


def types_used(plan: Plan) -> tuple[str, ...]:
    """The resource types a plan pays for: its stages' in order, then its server's."""
    used = [s.resource for s in plan.stages]
    if plan.parameter_server is not None:
        used.append(plan.parameter_server.resource)
    return tuple(dict.fromkeys(used))


def single_type_instance(instance: Instance, resource: str) -> Instance | str:
    """The instance with only `resource` (or why a layer cannot run on it)."""
    data = instance.to_dict()
    data["resources"] = [r for r in data["resources"] if r["name"] == resource]
    for layer in data["layers"]:
        if resource not in layer["compute_s"]:
            return f"layer {layer['name']} cannot run on {resource}"
        layer["compute_s"] = {resource: layer["compute_s"][resource]}
    server = data.get("parameter_server")
    if server is not None and server_need(instance) is None:
        del data["parameter_server"]  # nothing to serve: any type will do
    elif server is not None:
        if resource not in server["hosts"]:
            return (f"{resource} cannot host the parameter server (hosts: "
                    f"{', '.join(server['hosts'])})")
        row_s = server.get("row_s", {})
        data["parameter_server"] = {
            "hosts": [resource],
            "row_s": {resource: row_s[resource]} if resource in row_s else {},
        }
    return Instance.from_dict(data)


def single_type_plan(instance: Instance, resource: str, budget_s: float | None = None) -> Plan:
    """The exact optimum with every stage and the server on `resource`."""
    from heterps_core.schedulers.exact import exact_plan

    restricted = single_type_instance(instance, resource)
    if isinstance(restricted, str):
        return infeasible_plan(SCHEDULER, restricted, [resource] * len(instance.layers))
    return exact_plan(restricted, budget_s=budget_s).with_scheduler(SCHEDULER)


@dataclass(frozen=True)
class Heterogeneity:
    """A plan against the best plan on one resource type."""

    plan: Plan
    per_type: dict[str, Plan]  # resource type -> its single-type plan, feasible or not
    best: Plan | None  # the cheapest feasible of them

    @property
    def mix(self) -> tuple[str, ...]:
        return types_used(self.plan)

    @property
    def heterogeneous(self) -> bool:
        return len(self.mix) > 1

    @property
    def ratio(self) -> float | None:
        """Best homogeneous $/h over the plan's (> 1: heterogeneity pays)."""
        if self.best is None or not self.plan.feasible or not self.plan.cost_per_hour:
            return None
        assert self.best.cost_per_hour is not None
        return self.best.cost_per_hour / self.plan.cost_per_hour

    def summary(self) -> str:
        plan, best = self.plan, self.best
        if not plan.feasible:
            return "no plan: nothing to compare"
        mix = " + ".join(self.mix)
        if best is None:
            return (f"the plan mixes {mix}; no single resource type can meet the target "
                    "(each alone is infeasible)")
        ratio = self.ratio or math.nan
        best_types = " + ".join(types_used(best))
        against = (f"the best single-type plan (all on {best_types}, "
                   f"${best.cost_per_hour or 0:,.3f}/h) costs {ratio:.2f}x this plan")
        if not self.heterogeneous:
            if types_used(best) == self.mix and math.isclose(ratio, 1.0, rel_tol=1e-9):
                return f"homogeneous plan (all on {mix}): the best single-type plan itself"
            return f"homogeneous plan (all on {mix}); {against}"
        verdict = "heterogeneity pays" if ratio > 1 + 1e-9 else "heterogeneity does not pay"
        return f"{verdict}: this plan mixes {mix}; {against}"

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        ratio = self.ratio
        return {
            "ratio": None if ratio is None else round(ratio, 6),
            "heterogeneous": self.heterogeneous,
            "mix": list(self.mix),
            "best_homogeneous": None if best is None else {
                "resource": types_used(best)[0],
                "cost_per_hour": best.cost_per_hour,
                "throughput": best.throughput,
            },
            "per_type": {name: {"feasible": p.feasible, "cost_per_hour": p.cost_per_hour,
                                "reason": p.reason} for name, p in self.per_type.items()},
            "summary": self.summary(),
        }


def compare(instance: Instance, plan: Plan, budget_s: float | None = None) -> Heterogeneity:
    """`plan` (priced on `instance`) against every single-type optimum of `instance`."""
    per_type = {r: single_type_plan(instance, r, budget_s) for r in instance.resource_names}
    best: Plan | None = None
    for candidate in per_type.values():
        if is_better(candidate, best):
            best = candidate
    return Heterogeneity(plan, per_type, best if best is not None and best.feasible else None)


@dataclass(frozen=True)
class StageBound:
    """What a stage's time per mini-batch is mostly spent on, and what sets its units."""

    resource: str
    first: int
    last: int
    units: int
    bound: str  # compute | activations | gradient all-reduce | row wait
    share: float  # of the stage's time per mini-batch
    units_set_by: str  # one unit | the target | memory

    def describe(self, instance: Instance) -> str:
        names = [instance.layers[i].name for i in (self.first, self.last)]
        layers = names[0] if self.first == self.last else f"{names[0]}..{names[1]}"
        return (f"{layers} on {self.resource} x{self.units}: {self.bound} "
                f"{100 * self.share:.0f}%, units set by {self.units_set_by}")


def stage_bounds(instance: Instance, plan: Plan) -> list[StageBound]:
    """Each stage's largest time term under the cost model that priced the plan."""
    model = cost_model_for(instance)
    return [_stage_bound(model, stage, plan.parameter_server) for stage in plan.stages]


def _stage_bound(model: CostModel, stage: Stage, server: ServerPlacement | None) -> StageBound:
    first, last, name = stage.first, stage.last, stage.resource
    units = stage.units or 1
    parts = model.time_terms(first, last, name, units, server)
    bound = max(parts, key=lambda k: parts[k])
    total = sum(parts.values()) or 1.0
    fixed, sharded = model.memory_split(first, last)
    if units <= 1:
        why = "one unit"
    elif fixed + sharded / (units - 1) > model.instance.resource(name).memory_gb * (1 + 1e-9):
        why = "memory"
    else:
        why = "the target"
    return StageBound(name, first, last, units, bound, parts[bound] / total, why)
