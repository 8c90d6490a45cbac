"""How the CLI prints plans: JSON for machines, a compact table for people."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from heterps_core import provenance
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.throughput_band import throughput_band

if TYPE_CHECKING:
    from heterps_core.explain import Explanation
    from heterps_core.frontier import FrontierPoint
    from heterps_core.heterogeneity import Heterogeneity


def print_plan(instance: Instance, plan: Plan, as_json: bool,
               heterogeneity: Heterogeneity | None = None) -> None:
    if as_json:
        print(json.dumps(plan_json(instance, plan, heterogeneity), indent=2))
        return
    print(format_plan(instance, plan))
    if heterogeneity is not None and plan.feasible:
        print(heterogeneity.summary())


def plan_json(instance: Instance, plan: Plan,
              heterogeneity: Heterogeneity | None = None) -> dict[str, Any]:
    """The spec's plan JSON, plus where each used type's figures come from and, when
    asked, the plan against the best homogeneous plan."""
    data = plan.to_dict()
    data["provenance"] = provenance.to_json(provenance.of_plan(instance, plan))
    band = throughput_band(instance, plan)  # how far the figures' spread could move it
    if band is not None:
        data["throughput_band"] = band.to_dict()
    if heterogeneity is not None:
        data["heterogeneity"] = heterogeneity.to_dict()
    return data


def format_tiers(instance: Instance) -> str:
    """Every resource type's figure tier, as `heterps profile` reports what it wrote."""
    lines = ["figures per resource type:"]
    lines += [f"  {name}: {record.label()}"
              for name, record in provenance.of_instance(instance).items()]
    return "\n".join(lines)


def format_provenance(instance: Instance, plan: Plan) -> list[str]:
    """One line per type the plan uses: the tier of its figures (heterps_core/provenance)."""
    records = provenance.of_plan(instance, plan)
    return [f"figures of {name}: {record.label()}" for name, record in records.items()]


def format_plan(instance: Instance, plan: Plan) -> str:
    lines = [f"scheduler: {plan.scheduler}   solve time: {plan.solve_time_s:.3f} s wall"]
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
    server = plan.parameter_server
    if server is not None:
        lines.append(
            f"    -  parameter server             {server.resource:<12.12} {server.shards:>5} "
            f"{server.time_per_batch_s:>10.6f} {server.throughput:>12,.0f}"
        )
    if plan.cost_model == 2:
        ahead = [str(i + 1) for i, s in enumerate(plan.stages) if s.runs_ahead]
        lines.append(
            f"priced for sync {plan.sync}, {plan.micro_batches} micro-batch(es) (cost model v2)"
            + (f"; stage {', '.join(ahead)} runs ahead" if ahead else "")
        )
    lines.append(
        f"throughput {plan.throughput:,.0f} samples/s   cost ${plan.cost_per_hour:,.3f} per hour"
        + (f"   total ${plan.total_cost:,.2f} for {plan.hours:,.2f} h (estimate)"
           if plan.total_cost is not None and plan.hours is not None else "")
    )
    band = throughput_band(instance, plan)
    lines += [band.describe()] if band is not None else []
    lines += [f"note: {note}" for note in plan.notes]
    lines += format_provenance(instance, plan)
    return "\n".join(lines)


def stage_summary(plan: Plan) -> str:
    """'cpu x2 | gpu-a x4': the stages of a plan on one line."""
    return " | ".join(f"{s.resource} x{s.units if s.units is not None else '?'}"
                      for s in plan.stages)


def format_considered(
    instance: Instance, plans: list[Plan], chosen: Plan | None, skipped: dict[str, str]
) -> str:
    """The 'considered plans' table (one row per scheduler), the chosen one marked."""
    lines = [
        f"Considered plans for {instance.name or 'instance'} "
        f"(target {instance.throughput_target:,.0f} samples/s):",
        f"  {'scheduler':<12} {'$/hour':>10} {'samples/s':>12} {'$/M samples':>12} "
        f"{'solve s':>8}  stages",
    ]
    for plan in plans:
        mark = "✔" if plan is chosen else " "
        if plan.feasible:
            lines.append(
                f"{mark} {plan.scheduler:<12} {plan.cost_per_hour or 0:>10,.3f} "
                f"{plan.throughput or 0:>12,.0f} {plan.cost_per_million_samples or 0:>12,.4f} "
                f"{plan.solve_time_s:>8.3f}  {stage_summary(plan)}"
            )
        else:
            lines.append(
                f"{mark} {plan.scheduler:<12} {'-':>10} {'-':>12} {'-':>12} "
                f"{plan.solve_time_s:>8.3f}  infeasible: {plan.reason}"
            )
    for name, why in skipped.items():
        lines.append(f"  {name:<12} {'':>10} {'':>12} {'':>12} {'':>8}  skipped: {why}")
    if chosen is not None:
        lines.append("")
        lines.append(format_plan(instance, chosen))
    else:
        lines.append("No scheduler found a feasible plan.")
    return "\n".join(lines)


def format_frontier(points: list[FrontierPoint]) -> str:
    lines = [
        f"{'target':>12} {'samples/s':>12} {'$/hour':>10} {'$/M samples':>12}  stages",
    ]
    for p in points:
        plan = p.plan
        if not plan.feasible:
            lines.append(f"{p.target:>12,.0f} {'-':>12} {'-':>10} {'-':>12}  infeasible: "
                         f"{plan.reason}")
            continue
        flag = "  (dominated)" if p.dominated else ""
        lines.append(
            f"{p.target:>12,.0f} {plan.throughput or 0:>12,.0f} {plan.cost_per_hour or 0:>10,.3f} "
            f"{plan.cost_per_million_samples or 0:>12,.4f}  {stage_summary(plan)}{flag}"
        )
    return "\n".join(lines)


def format_explanation(explanation: Explanation) -> str:
    lines = ["", f"Binding: {explanation.binding}"]
    lines += [f"  {note}" for note in explanation.stage_notes]
    lines.append("Runner-ups:")
    for alt in explanation.alternatives:
        lines.append(f"  {alt.label:<28} {alt.verdict}")
    return "\n".join(lines)
