"""`homogeneous`: the best plan that puts every layer on one resource (all-CPU, all-GPU, ...)."""

from __future__ import annotations

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.common import infeasible_plan, is_better
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register


def single_resource_plans(instance: Instance, scheduler: str = "homogeneous") -> list[Plan]:
    """One plan per resource, every layer on it, feasible or not (with its reason)."""
    model = cost_model_for(instance)
    n = len(instance.layers)
    return [model.evaluate([r] * n, scheduler) for r in instance.resource_names]


@register
class HomogeneousScheduler(Scheduler):
    name = "homogeneous"
    summary = "Best plan with every layer on a single resource type."

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        best: Plan | None = None
        plans = single_resource_plans(instance, self.name)
        for i, plan in enumerate(plans):
            progress(Progress(i + 1, len(plans), f"all on {instance.resource_names[i]}"))
            if is_better(plan, best):
                best = plan
        if best is not None:
            return best
        reasons = "; ".join(f"all on {p.assignment[0]}: {p.reason}" for p in plans if p.assignment)
        return infeasible_plan(self.name, f"no single resource can run the model ({reasons})")
