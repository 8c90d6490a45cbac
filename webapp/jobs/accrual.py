"""A run's accrued cost itemised per stage (issue 16, honest cost): each stage's units x
their price x the time they were held, split into start-up (before the first mini-batch
finished), training busy, training idle (waiting on peers) and stopping. A run that held
machines and trained nothing (a failed start) is all start-up, and says so.

Every stage's processes start together and end together, so each stage is held for the
run's whole time; the split uses the run's start-up and span and each stage's busy share.
Prices per unit come from the instance the plan was solved on; a plan that came without
one (a sample or a CLI plan) has its $/hour split over its units, and the table says so.
"""

from __future__ import annotations

from typing import Any

from heterps_core.plan import Plan
from webapp.jobs.models import Job


def prices(job: Job, plan: Plan) -> tuple[dict[str, float], str]:
    """Price per unit-hour of each resource type of the plan, and where it came from."""
    instance = _instance(job)
    if instance:
        found = {r["name"]: float(r["price_per_hour"]) for r in instance.get("resources", [])}
        if all(s.resource in found for s in plan.stages):
            return found, "the prices of the instance the plan was solved on"
    server = plan.parameter_server.cost_per_hour if plan.parameter_server else 0.0
    units = sum(s.units or 0 for s in plan.stages)
    per_unit = ((plan.cost_per_hour or 0.0) - server) / units if units else 0.0
    return ({s.resource: per_unit for s in plan.stages},
            "the plan's $ per hour split evenly over its units (its instance is not here)")


def run_accrual(job: Job, series: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The latest run's accrued $, per stage and in all (None: the run stored no sample)."""
    if not series:
        return None
    plan = Plan.from_dict(job.plan)
    summary = job.summary or {}
    last = series[-1]
    held = float(summary.get("elapsed_s") or last["elapsed_s"])
    began, span, approx = _phases(summary, series)
    trained = began is not None
    if not trained:  # no mini-batch finished: every second held was starting
        began, span = held, 0.0
    startup = min(float(began or 0.0), held)
    stopping = max(held - startup - span, 0.0)
    price, price_source = prices(job, plan)
    shares = {int(s.get("stage", i + 1)): s.get("busy_share")
              for i, s in enumerate(summary.get("stages") or last.get("stages") or [])}
    rows = []
    for i, stage in enumerate(plan.stages, start=1):
        units = stage.units or 1
        rows.append(_row(f"stage {i}", stage.resource, units, price.get(stage.resource, 0.0),
                         held, startup, span, stopping, shares.get(i)))
    if plan.parameter_server:
        ps = plan.parameter_server
        rows.append(_row("parameter server", ps.resource, ps.shards,
                         ps.cost_per_hour / ps.shards if ps.shards else 0.0,
                         held, startup, span, stopping, None))
    total = sum(r["accrued"] for r in rows)
    return {
        "rows": rows, "held_s": held, "startup_s": startup, "span_s": span,
        "stopping_s": stopping, "trained": trained, "price_source": price_source,
        "phases_approximate": approx, "finished_batches": int(last.get("step") or 0),
        "accrued": total, "cost_per_hour": sum(r["cost_per_hour"] for r in rows),
        # What the runtime accrued for the run (plan $/hour x held time), to compare.
        "runtime_accrued": float(summary.get("cost") or last["cost"]),
        "startup_usd": sum(r["startup"] for r in rows),
        "busy_usd": sum(r["busy"] or 0.0 for r in rows),
        "idle_usd": sum(r["idle"] or 0.0 for r in rows),
        "stopping_usd": sum(r["stopping"] for r in rows),
    }


def _phases(summary: dict[str, Any], series: list[dict[str, Any]]
            ) -> tuple[float | None, float, bool]:
    """Start-up (s to the first finished mini-batch) and span (first to last finished), and
    whether they are read off the stored samples (a run without a summary yet: running,
    failed or cancelled), which places each within one report window."""
    if summary.get("startup_s") is not None:
        return float(summary["startup_s"]), float(summary.get("span_s") or 0.0), False
    trained = [row for row in series if int(row.get("step") or 0) > 0]
    if not trained:
        return None, 0.0, True
    first = trained[0]
    moved = [row for i, row in enumerate(series)
             if i and int(row.get("step") or 0) > int(series[i - 1].get("step") or 0)]
    last = moved[-1] if moved else first
    return float(first["elapsed_s"]), float(last["elapsed_s"]) - float(first["elapsed_s"]), True


def _row(label: str, resource: str, units: int, price: float, held: float, startup: float,
         span: float, stopping: float, busy_share: float | None) -> dict[str, Any]:
    rate = units * price / 3600  # $ per second held
    training = rate * span
    busy = None if busy_share is None else training * busy_share
    return {
        "label": label, "resource": resource, "units": units, "price_per_hour": price,
        "cost_per_hour": units * price, "held_s": held, "accrued": rate * held,
        "startup": rate * startup, "training": training, "busy": busy,
        "idle": None if busy is None else training - busy, "stopping": rate * stopping,
    }


def _instance(job: Job) -> dict[str, Any] | None:
    request = job.planning_request()
    return request.instance if request is not None else None
