"""How the CLI prints plans: JSON for machines, a compact table for people."""

from __future__ import annotations

from heterps_core.instance import Instance
from heterps_core.plan import Plan


def print_plan(instance: Instance, plan: Plan, as_json: bool) -> None:
    if as_json:
        print(plan.to_json())
        return
    print(format_plan(instance, plan))


def format_plan(instance: Instance, plan: Plan) -> str:
    lines = [f"scheduler: {plan.scheduler}   solve time: {plan.solve_time_s:.3f} s"]
    if not plan.feasible:
        lines.append(f"INFEASIBLE: {plan.reason}")
        return "\n".join(lines)
    lines.append(f"{'stage':>5}  {'layers':<28} {'resource':<12} {'units':>5} "
                 f"{'s/batch':>10} {'samples/s':>12}")
    for i, stage in enumerate(plan.stages):
        names = [instance.layers[j].name for j in stage.layers]
        label = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]} ({len(names)})"
        lines.append(
            f"{i + 1:>5}  {label:<28.28} {stage.resource:<12.12} {stage.units:>5} "
            f"{stage.time_per_batch_s or 0:>10.6f} {stage.throughput or 0:>12,.0f}"
        )
    lines.append(
        f"throughput {plan.throughput:,.0f} samples/s   cost ${plan.cost_per_hour:,.3f} per hour"
        + (f"   total ${plan.total_cost:,.2f} for {plan.hours:,.2f} h (estimate)"
           if plan.total_cost is not None and plan.hours is not None else "")
    )
    return "\n".join(lines)
