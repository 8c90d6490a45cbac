"""The `evaluate` work kind: price assignments of an instance with the spec's cost model.

It is the end-to-end example of the background-work pattern: validated JSON in, one
heterps_core call per step, progress after each, the plans as JSON out.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from heterps_core.costmodel import ChainCosts, evaluate, is_better
from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress
from webapp.background.context import WorkContext
from webapp.background.kinds import INTERACTIVE, WorkKind, register

MAX_ASSIGNMENTS = 1000


@register
class EvaluateKind(WorkKind):
    name = "evaluate"
    label = "Price assignments with the cost model"
    queue = INTERACTIVE
    retryable = True
    # The instance's shape; the rules between its parts (a layer's compute_s names one of
    # its resources, names unique, an assignment as long as the layers) JSON Schema cannot
    # say: clean_params names the field that breaks one (400).
    params_schema = {
        "type": "object", "required": ["instance"],
        "properties": {
            "instance": {"type": "object", "required": [
                "version", "batch_size", "throughput_target", "resources", "layers"],
                "description": "a planning instance (docs/cost-model.md)"},
            "assignments": {
                "type": "array", "maxItems": MAX_ASSIGNMENTS,
                "items": {"type": "array", "items": {"type": "string"}},
                "description": "resource names, one per layer, per plan to price (default: "
                               "each resource alone)"}}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise ValidationError({"params": "must be a JSON object"})
        instance = _instance(params.get("instance"))
        assignments = params.get("assignments") or _single_resource(instance)
        if not isinstance(assignments, list) or len(assignments) > MAX_ASSIGNMENTS:
            raise ValidationError(
                {"assignments": f"must be a list of at most {MAX_ASSIGNMENTS} assignments"}
            )
        for i, assignment in enumerate(assignments):
            _check_assignment(instance, assignment, f"assignments[{i}]")
        return {"instance": instance.to_dict(), "assignments": assignments}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        params = ctx.params
        instance = Instance.from_dict(params["instance"])
        costs = ChainCosts(instance)
        assignments = params["assignments"]
        plans: list[Plan] = []
        best: int | None = None
        for i, assignment in enumerate(assignments):
            plan = evaluate(instance, assignment, costs=costs)
            if is_better(plan, plans[best] if best is not None else None):
                best = i
            plans.append(plan)
            ctx.progress(
                Progress(
                    i + 1,
                    len(assignments),
                    f"priced {','.join(assignment)}",
                    {"cost_per_hour": plan.cost_per_hour, "throughput": plan.throughput},
                )
            )
        return {"plans": [p.to_dict() for p in plans], "best": best}


def _instance(raw: Any) -> Instance:
    try:
        return Instance.from_dict(raw)
    except InstanceError as exc:
        field = f"instance.{exc.field}" if exc.field else "instance"
        raise ValidationError({field: exc.problem}) from exc


def _single_resource(instance: Instance) -> list[list[str]]:
    return [[r.name] * len(instance.layers) for r in instance.resources]


def _check_assignment(instance: Instance, assignment: Any, where: str) -> None:
    if not isinstance(assignment, list) or not all(isinstance(a, str) for a in assignment):
        raise ValidationError({where: "must be a list of resource names"})
    if len(assignment) != len(instance.layers):
        layers = len(instance.layers)
        raise ValidationError(
            {where: f"has {len(assignment)} entries, the instance has {layers} layers"}
        )
    unknown = sorted(set(assignment) - set(instance.resource_names))
    if unknown:
        raise ValidationError({where: f"names no resource: {', '.join(unknown)}"})
