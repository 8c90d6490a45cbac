"""What pages and the API show about a planning request's results: the comparison table,
the charts, a plan's explanation, its figures' tiers and throughput band, and how it
compares with the best single-type plan."""

from __future__ import annotations

import math
from typing import Any

from heterps_core.errors import HeterPSError
from heterps_core.explain import explain, verdict
from heterps_core.heterogeneity import compare, types_used
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.provenance import ResourceProvenance, of_instance, summarise
from heterps_core.throughput_band import throughput_band as band_of
from webapp.planning.models import PlanningRequest, PlanResult


def comparison(request: PlanningRequest) -> list[dict[str, Any]]:
    """One row per scheduler, SkyPilot-style: chosen first, then by cost."""
    rows = []
    for result in request.results.all():
        plan = result.plan or {}
        rows.append({
            "result": result,
            "scheduler": result.scheduler,
            "feasible": result.feasible,
            "cost_per_hour": result.cost_per_hour,
            "cost_per_million": result.cost_per_million_samples,
            "total_cost": plan.get("total_cost"),
            "throughput": result.throughput,
            "solve_time_s": result.solve_time_s,
            "gap": result.gap_to_exact,
            "gap_percent": None if result.gap_to_exact is None else 100 * result.gap_to_exact,
            "chosen": result.chosen,
            "reason": result.error or plan.get("reason") or "",
            "stages": len(plan.get("stages") or []),
        })
    rows.sort(key=lambda r: (not r["chosen"], not r["feasible"],
                             r["cost_per_hour"] if r["cost_per_hour"] is not None else math.inf))
    return rows


def chart_data(request: PlanningRequest) -> dict[str, Any]:
    """What the scatter and the stage diagrams draw (JSON for the page script)."""
    layer_names = [layer["name"] for layer in request.instance["layers"]]
    frontier_points = [p for p in request.frontier if p.get("feasible") and not p.get("dominated")]
    return {"target": request.throughput_target, "layers": len(layer_names),
            "plans": [_plan_entry(r, layer_names) for r in request.results.all()],
            "frontier": [{"throughput": p["throughput"], "cost_per_hour": p["cost_per_hour"],
                          "target": p["target"]} for p in frontier_points]}


def plan_chart(result: PlanResult) -> dict[str, Any]:
    """The stage diagram of one plan."""
    layer_names = [layer["name"] for layer in result.instance["layers"]]
    return {"target": result.request.throughput_target, "layers": len(layer_names),
            "plans": [_plan_entry(result, layer_names)], "frontier": []}


def _plan_entry(result: PlanResult, layer_names: list[str]) -> dict[str, Any]:
    plan = result.plan or {}
    return {
        "scheduler": result.scheduler, "feasible": result.feasible, "chosen": result.chosen,
        "cost_per_hour": result.cost_per_hour, "throughput": result.throughput,
        "stages": [
            {"resource": s["resource"], "units": s["units"], "layers": len(s["layers"]),
             "first": layer_names[s["layers"][0]], "last": layer_names[s["layers"][-1]],
             "throughput": s["throughput"]}
            for s in plan.get("stages") or []
        ],
    }


def explanation(result: PlanResult) -> dict[str, Any]:
    """Binding stage, what sets each stage's units, and why the alternatives lost."""
    instance = Instance.from_dict(result.instance)
    if not result.plan:
        return {"binding_stage": None, "binding": result.error, "stages": [], "alternatives": []}
    data = explain(instance, Plan.from_dict(result.plan)).to_dict()
    others = result.request.results.exclude(pk=result.pk)
    data["schedulers"] = [
        {"scheduler": o.scheduler, "verdict": _verdict(result, o)} for o in others
    ]
    return data


def throughput_band(result: PlanResult) -> str | None:
    """How far the plan's throughput could move with its figures' measured spread (one line,
    heterps_core/throughput_band.py), or None when none of them has one."""
    if not result.feasible or not result.plan:
        return None
    band = band_of(Instance.from_dict(result.instance), Plan.from_dict(result.plan))
    return band.range_text() if band is not None else None


def figure_tiers(request: PlanningRequest) -> dict[str, ResourceProvenance]:
    """Where each resource type's figures come from: the instance's own records, or for a
    request stored before them, summarised from its figure provenance (measured figures of
    such a request do not say where: they read as unknown, never as measured here)."""
    try:
        instance = Instance.from_dict(request.instance)
    except HeterPSError:
        return {}  # a row stored without a valid instance: nothing to say
    records = of_instance(instance)
    if any(r.provenance is not None for r in instance.resources):
        return records
    return {**records, **{k: v for k, v in summarise(request.provenance).items()
                          if k in records}}


def plan_figures(result: PlanResult) -> dict[str, ResourceProvenance]:
    """The records of the types a plan uses (stages, then its server)."""
    tiers = figure_tiers(result.request) if result.plan else {}
    used = types_used(Plan.from_dict(result.plan)) if tiers else ()
    return {name: tiers[name] for name in used if name in tiers}


def heterogeneity(result: PlanResult) -> dict[str, Any] | None:
    """The plan against the best plan on one resource type (heterps_core/heterogeneity.py):
    the exact optimum of each single type on the same instance and target."""
    if not result.feasible or not result.plan:
        return None
    return compare(Instance.from_dict(result.instance), Plan.from_dict(result.plan)).to_dict()


def stage_rows(result: PlanResult) -> list[dict[str, Any]]:
    instance = result.instance
    resources = {r["name"]: r for r in instance["resources"]}
    rows = []
    tiers = plan_figures(result)
    for i, stage in enumerate((result.plan or {}).get("stages") or []):
        layers = [instance["layers"][j]["name"] for j in stage["layers"]]
        price = _unit_price(resources[stage["resource"]], stage.get("market"))
        rows.append({"number": i + 1, "layers": layers, "resource": stage["resource"],
                     "market": stage.get("market"),
                     "checkpoint_every": stage.get("checkpoint_every"),
                     "figures": tiers.get(stage["resource"]),
                     "units": stage["units"], "time_per_batch_s": stage["time_per_batch_s"],
                     "time_per_batch_ms": (stage["time_per_batch_s"] or 0.0) * 1e3,
                     "throughput": stage["throughput"],
                     "cost_per_hour": (stage["units"] or 0) * price})
    server = (result.plan or {}).get("parameter_server")
    if server:  # its shards are units of a type too: priced and counted like a stage's
        price = resources[server["resource"]]["price_per_hour"]
        rows.append({"number": "server", "layers": ["parameter-server shards (the tables)"],
                     "resource": server["resource"], "figures": tiers.get(server["resource"]),
                     "units": server["shards"], "time_per_batch_s": server["time_per_batch_s"],
                     "time_per_batch_ms": server["time_per_batch_s"] * 1e3,
                     "throughput": server["throughput"],
                     "cost_per_hour": server["shards"] * price})
    return rows


def _unit_price(resource: dict[str, Any], market: str | None) -> float:
    """A stage's $ per unit-hour in its market. On spot, the spot price alone: the plan
    records no per-stage cost, so the work expected to be lost to interruptions is in the
    plan's total only (the page says so)."""
    if market == "spot" and resource.get("market"):
        return float(resource["market"]["spot_price"])
    return float(resource["price_per_hour"])


def _verdict(chosen: PlanResult, other: PlanResult) -> str:
    if other.plan is None:
        return f"failed: {other.error}"
    if other.plan.get("assignment") == (chosen.plan or {}).get("assignment"):
        return "found the same plan"
    return verdict(Plan.from_dict(chosen.plan or {}), Plan.from_dict(other.plan))


def spot_saving(plan_result: PlanResult) -> dict[str, Any] | None:
    """What this plan saves per hour against the all-on-demand optimum of its request (both
    estimates of the same cost model), or None without spot offers. With no on-demand plan
    within the request's caps, the reason stands in for the saving."""
    optimum = plan_result.request.on_demand_optimum
    if not optimum or not plan_result.feasible or plan_result.cost_per_hour is None:
        return None
    if not optimum["feasible"]:
        return {"on_demand": None, "reason": optimum["reason"]}
    on_demand = float(optimum["cost_per_hour"])
    saving = on_demand - float(plan_result.cost_per_hour)
    percent = f" ({100 * abs(saving) / on_demand:.1f}%)" if on_demand else ""
    # A plan of another scheduler can cost more than the on-demand optimum: it says so.
    text = f"${abs(saving):,.3f} per hour {'less' if saving >= 0 else 'more'}{percent}"
    return {"on_demand": on_demand, "saving": saving, "text": text}
