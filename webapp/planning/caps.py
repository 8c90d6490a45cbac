"""Cost caps on a planning request (issue 26.4): `max_hourly_cost` and `max_total_cost`,
handed to the schedulers as the core's CostCaps (heterps_core/costmodels/caps.py), which
keep the cheapest plan within them or say what the target needs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from heterps_core import limits
from heterps_core.costmodels.caps import CostCaps
from heterps_core.errors import InstanceError

FIELDS = ("max_hourly_cost", "max_total_cost")


def checked_caps(max_hourly_cost: Any, max_total_cost: Any,
                 samples: float | None) -> CostCaps:
    """The request's caps (None: no cap), each in the core's range; a total cap needs the
    job's length (`samples`). ValidationError names every field with a problem."""
    values: dict[str, float | None] = {}
    problems: dict[str, str] = {}
    for field, value in zip(FIELDS, (max_hourly_cost, max_total_cost), strict=True):
        if value in (None, ""):
            values[field] = None
            continue
        try:
            values[field] = limits.check(field, value)
        except InstanceError as exc:
            problems[field] = exc.problem
    if values.get("max_total_cost") is not None and samples is None:
        problems["max_total_cost"] = ("needs samples to train on (the job's length gives its "
                                      "total cost)")
    if problems:
        raise ValidationError(problems)
    return CostCaps(**values)


def caps_of(request: Any) -> CostCaps:
    """A stored request's caps (PlanningRequest; requests before caps have none)."""
    return CostCaps(request.max_hourly_cost, request.max_total_cost)
