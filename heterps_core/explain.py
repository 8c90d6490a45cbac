"""Why a plan: its binding stage, the runner-up plans and why they lost, and what-if re-plans.

Runner-ups are the plans a user would think of: every single-resource plan, the CPU/GPU rule
of thumb, and the best plan *without* each resource the chosen plan uses. Each gets a
verdict: infeasible (and which constraint), or feasible and how much dearer (or, at equal
cost, how much slower).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.common import costs_equal, infeasible_plan
from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan


@dataclass(frozen=True)
class Alternative:
    label: str
    plan: Plan
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "feasible": self.plan.feasible,
            "assignment": list(self.plan.assignment) if self.plan.assignment else None,
            "cost_per_hour": self.plan.cost_per_hour,
            "throughput": self.plan.throughput,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Explanation:
    plan: Plan
    binding_stage: int | None
    binding: str
    stage_notes: list[str] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "binding_stage": self.binding_stage,
            "binding": self.binding,
            "stages": self.stage_notes,
            "alternatives": [a.to_dict() for a in self.alternatives],
        }


@dataclass(frozen=True)
class WhatIf:
    change: str
    before: Plan
    after: Plan

    @property
    def delta_cost_per_hour(self) -> float | None:
        if not (self.before.feasible and self.after.feasible):
            return None
        assert self.before.cost_per_hour is not None and self.after.cost_per_hour is not None
        return self.after.cost_per_hour - self.before.cost_per_hour

    def summary(self) -> str:
        if not self.after.feasible:
            return f"{self.change}: no feasible plan ({self.after.reason})"
        if not self.before.feasible:
            return f"{self.change}: becomes feasible at ${self.after.cost_per_hour:,.3f}/h"
        delta = self.delta_cost_per_hour or 0.0
        assert self.before.cost_per_hour is not None
        pct = 100 * delta / self.before.cost_per_hour
        moved = "" if self.after.assignment == self.before.assignment else " (plan changes)"
        return (
            f"{self.change}: ${self.after.cost_per_hour:,.3f}/h, "
            f"{delta:+,.3f} ({pct:+.1f}%){moved}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "delta_cost_per_hour": self.delta_cost_per_hour,
            "summary": self.summary(),
        }


def explain(instance: Instance, plan: Plan | None = None) -> Explanation:
    """Explain `plan` (default: the exact optimum) against the plans a user would compare."""
    from heterps_core.schedulers.exact import exact_plan

    plan = plan or exact_plan(instance)
    if not plan.feasible or not plan.stages:
        binding_stage, binding, notes = None, f"no plan: {plan.reason}", []
    else:
        binding_stage, binding = _binding(instance, plan)
        notes = _stage_notes(instance, plan)
    return Explanation(plan, binding_stage, binding, notes, _alternatives(instance, plan))


def _binding(instance: Instance, plan: Plan) -> tuple[int, str]:
    index = min(range(len(plan.stages)), key=lambda i: plan.stages[i].throughput or 0.0)
    stage = plan.stages[index]
    return index, (
        f"stage {index + 1} ({_label(instance, stage.layers)} on {stage.resource}, "
        f"{_units(stage.units or 0)}) is the slowest: {stage.throughput or 0:,.0f} samples/s "
        f"against a target of {instance.throughput_target:,.0f}"
    )


def _stage_notes(instance: Instance, plan: Plan) -> list[str]:
    """What sets each stage's unit count: the target, memory, or neither (one unit)."""
    costs = cost_model_for(instance).chain
    notes = []
    for i, stage in enumerate(plan.stages):
        shape = costs.shape(stage.first, stage.last, stage.resource)
        units = stage.units or 0
        head = f"stage {i + 1} ({_label(instance, stage.layers)} on {stage.resource})"
        if units <= 1:
            notes.append(f"{head}: 1 unit suffices")
            continue
        res = instance.resource(stage.resource)
        fewer = units - 1
        thr = shape.throughput(fewer, instance.batch_size)
        mem = shape.memory_gb(fewer)
        if mem > res.memory_gb * (1 + 1e-9):
            why = (
                f"memory: {_units(fewer)} would need {mem:,.1f} GB each, "
                f"{res.memory_gb:g} GB exist"
            )
        else:
            why = f"the target: {_units(fewer)} would give {thr:,.0f} samples/s"
        notes.append(f"{head}: {units} units, set by {why}")
    return notes


def _alternatives(instance: Instance, chosen: Plan) -> list[Alternative]:
    from heterps_core.schedulers.exact import exact_plan
    from heterps_core.schedulers.heuristic import heuristic_assignment

    model = cost_model_for(instance)
    n = len(instance.layers)
    candidates: list[tuple[str, Plan]] = [
        (f"all on {r}", model.evaluate([r] * n, "homogeneous"))
        for r in instance.resource_names
    ]
    candidates.append(
        ("sparse on CPU, dense on GPU",
         model.evaluate(heuristic_assignment(instance), "heuristic"))
    )
    for res in sorted(set(chosen.assignment or ())):
        if len(instance.resources) > 1:
            candidates.append((f"best without {res}", _without(instance, res, exact_plan)))
    seen = {chosen.assignment}
    out = []
    for label, plan in candidates:
        if plan.assignment is not None and plan.assignment in seen:
            continue
        seen.add(plan.assignment)
        out.append(Alternative(label, plan, verdict(chosen, plan)))
    out.sort(key=lambda a: (not a.plan.feasible, a.plan.cost_per_hour or 0.0))
    return out


def verdict(chosen: Plan, other: Plan) -> str:
    """Why `other` lost to `chosen`, in words."""
    if not other.feasible:
        return f"infeasible: {other.reason}"
    if not chosen.feasible:
        return "feasible where the chosen plan is not"
    assert other.cost_per_hour is not None and chosen.cost_per_hour is not None
    if costs_equal(other.cost_per_hour, chosen.cost_per_hour):
        return (
            f"same cost, lower throughput ({other.throughput or 0:,.0f} vs "
            f"{chosen.throughput or 0:,.0f} samples/s)"
        )
    delta = other.cost_per_hour - chosen.cost_per_hour
    return f"${delta:,.3f}/h more ({100 * delta / chosen.cost_per_hour:+.1f}%)"


def _without(instance: Instance, resource: str, solver: Any) -> Plan:
    data = instance.to_dict()
    data["resources"] = [r for r in data["resources"] if r["name"] != resource]
    for layer in data["layers"]:
        layer["compute_s"].pop(resource, None)
        if not layer["compute_s"]:
            return infeasible_plan("exact", f"layer {layer['name']} runs only on {resource}")
    server = data.get("parameter_server")
    if server is not None:  # v2: the server may no longer sit on the type left out
        server["hosts"] = [h for h in server["hosts"] if h != resource]
        server.get("row_s", {}).pop(resource, None)
        if not server["hosts"]:
            return infeasible_plan("exact", f"only {resource} may host the parameter server")
    plan: Plan = solver(Instance.from_dict(data))
    return plan


def what_if(
    instance: Instance,
    resource: str,
    price_per_hour: float | None = None,
    count: int | None = None,
    network_gbps: float | None = None,
    before: Plan | None = None,
) -> WhatIf:
    """Re-plan exactly with one resource's price, count or bandwidth changed."""
    from heterps_core.schedulers.exact import exact_plan

    changes: dict[str, Any] = {}
    if price_per_hour is not None:
        changes["price_per_hour"] = price_per_hour
    if count is not None:
        changes["count"] = count
    if network_gbps is not None:
        changes["network_gbps"] = network_gbps
    if not changes:
        raise InstanceError("what-if", "give a new price_per_hour, count or network_gbps")
    old = instance.resource(resource) if resource in instance.resource_names else None
    if old is None:
        raise InstanceError("resource", f"no resource named {resource!r}")
    changed = instance.with_resource(resource, **changes)  # validates the new values
    words = ", ".join(f"{k} {getattr(old, k):g} -> {v:g}" for k, v in changes.items())
    return WhatIf(
        change=f"{resource}: {words}",
        before=before or exact_plan(instance),
        after=exact_plan(changed),
    )


def _label(instance: Instance, layers: tuple[int, ...]) -> str:
    first, last = instance.layers[layers[0]].name, instance.layers[layers[-1]].name
    return first if len(layers) == 1 else f"{first}..{last}"


def _units(k: int) -> str:
    return f"{k} unit" if k == 1 else f"{k} units"
