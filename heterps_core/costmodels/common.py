"""What every cost model shares: the objective's comparisons, stages of an assignment, checks.

The tolerances are the spec's (docs/cost-model.md "Choices where the spec is silent"); every
model, solver and test compares plans through these, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan

REL_TOL = 1e-9

Run = tuple[int, int, str]  # a stage: first layer, last layer, resource


def stages_of(assignment: Sequence[str]) -> list[Run]:
    """§2: maximal runs of equal resources as (first, last, resource), in order."""
    runs: list[Run] = []
    start = 0
    for i in range(1, len(assignment) + 1):
        if i == len(assignment) or assignment[i] != assignment[start]:
            runs.append((start, i - 1, assignment[start]))
            start = i
    return runs


def is_better(candidate: Plan, incumbent: Plan | None) -> bool:
    """§4 objective: feasible beats infeasible; lower cost; on equal cost, higher throughput."""
    if not candidate.feasible:
        return False
    if incumbent is None or not incumbent.feasible:
        return True
    assert candidate.cost_per_hour is not None and incumbent.cost_per_hour is not None
    if not costs_equal(candidate.cost_per_hour, incumbent.cost_per_hour):
        return candidate.cost_per_hour < incumbent.cost_per_hour
    return (candidate.throughput or 0.0) > (incumbent.throughput or 0.0) * (1 + REL_TOL)


def costs_equal(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def check_assignment(instance: Instance, assignment: Sequence[str]) -> None:
    if len(assignment) != len(instance.layers):
        raise InstanceError(
            "assignment",
            f"has {len(assignment)} entries, the instance has {len(instance.layers)} layers",
        )
    names = set(instance.resource_names)
    for i, res in enumerate(assignment):
        if res not in names:
            raise InstanceError(f"assignment[{i}]", f"{res!r} names no resource")


def infeasible_plan(scheduler: str, reason: str, assignment: Sequence[str] | None = None) -> Plan:
    return Plan(
        scheduler=scheduler,
        feasible=False,
        assignment=tuple(assignment) if assignment is not None else None,
        reason=reason,
    )


def describe(instance: Instance, first: int, last: int) -> str:
    """How reasons name a stage: its layer, or its first and last layers."""
    names = instance.layers
    if first == last:
        return f"layer {names[first].name}"
    return f"stage {names[first].name}..{names[last].name}"


def prefix(values: Sequence[float]) -> list[float]:
    out = [0.0]
    for v in values:
        out.append(out[-1] + v)
    return out


def job_length(instance: Instance, throughput: float,
               cost_per_hour: float) -> tuple[float | None, float | None]:
    """(hours, total $) of training the instance's `samples` at `throughput`; (None, None)
    when the instance gives no sample count (§4)."""
    if instance.samples is None:
        return None, None
    hours = instance.samples / throughput / 3600
    return hours, cost_per_hour * hours
