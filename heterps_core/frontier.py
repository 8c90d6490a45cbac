"""The cost/throughput frontier: the exact cheapest plan for each of a sweep of targets.

Each point is the optimum at its target (availability caps included), so the curve is what
a user can actually buy. A point is `dominated` when another point of the sweep reaches at
least its throughput for no more money (a plan for a lower target can overshoot).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback, no_progress

DEFAULT_POINTS = 20
DEFAULT_SPAN = 4.0  # default sweep: target / 4 .. target * 4, geometric


@dataclass(frozen=True)
class FrontierPoint:
    target: float
    plan: Plan
    dominated: bool = False

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan
        per_million = plan.cost_per_million_samples
        return {
            "target": self.target,
            "feasible": plan.feasible,
            "throughput": None if plan.throughput is None else round(plan.throughput, 6),
            "cost_per_hour": None if plan.cost_per_hour is None else round(plan.cost_per_hour, 9),
            "cost_per_million_samples": None if per_million is None else round(per_million, 9),
            "total_cost": None if plan.total_cost is None else round(plan.total_cost, 6),
            "assignment": list(plan.assignment) if plan.assignment else None,
            "units": [s.units for s in plan.stages],
            "dominated": self.dominated,
            "reason": plan.reason,
            **({"sync": plan.sync, "micro_batches": plan.micro_batches}
               if plan.cost_model == 2 else {}),
        }


def default_targets(
    instance: Instance, points: int = DEFAULT_POINTS, low: float | None = None,
    high: float | None = None,
) -> list[float]:
    """`points` targets, geometrically spaced (throughput spans orders of magnitude)."""
    if points < 1:
        raise InstanceError("points", f"must be at least 1, got {points}")
    low = low if low is not None else instance.throughput_target / DEFAULT_SPAN
    high = high if high is not None else instance.throughput_target * DEFAULT_SPAN
    if not (0 < low <= high) or not math.isfinite(high):
        raise InstanceError("targets", f"need 0 < low <= high, got {low:g} .. {high:g}")
    if points == 1:
        return [low]
    ratio = (high / low) ** (1 / (points - 1))
    return [round(low * ratio**k, 6) for k in range(points)]


def frontier(
    instance: Instance,
    targets: Sequence[float] | None = None,
    progress: ProgressCallback = no_progress,
) -> list[FrontierPoint]:
    from heterps_core.schedulers.exact import exact_plan

    targets = list(targets) if targets is not None else default_targets(instance)
    for i, target in enumerate(targets):
        if not (isinstance(target, int | float) and math.isfinite(target) and target > 0):
            raise InstanceError(f"targets[{i}]", f"must be a positive number, got {target!r}")
    plans = []
    for i, target in enumerate(sorted(targets)):
        # The solve reports into this target's share of the bar; the report is also how a
        # cancel reaches the DP loops (the callback raises), so one huge target can stop.
        def inner(p: Progress, i: int = i, target: float = target) -> None:
            progress(Progress(i * 1000 + round(1000 * p.fraction), len(targets) * 1000,
                              f"target {target:g} samples/s: {p.message}", p.metrics))

        plans.append(exact_plan(instance.with_target(float(target)), progress=inner)
                     .with_scheduler("exact"))
        progress(Progress(i + 1, len(targets), f"target {target:g} samples/s"))
    return mark_dominated(sorted(targets), plans)


def mark_dominated(targets: list[float], plans: list[Plan]) -> list[FrontierPoint]:
    points = []
    for target, plan in zip(targets, plans, strict=True):
        dominated = plan.feasible and any(
            other is not plan
            and other.feasible
            and (other.throughput or 0) >= (plan.throughput or 0)
            and (other.cost_per_hour or 0) < (plan.cost_per_hour or 0) * (1 - 1e-9)
            for other in plans
        )
        points.append(FrontierPoint(target, plan, dominated))
    return points


def frontier_to_dict(instance: Instance, points: list[FrontierPoint]) -> dict[str, Any]:
    return {
        "instance": instance.name,
        "points": [p.to_dict() for p in points],
    }
