"""What a plan's spot stages mean for its job: how many automatic restarts it gets after spot
notices (`Job.max_restarts`, used by `recovery`), checked here for the approve form, the API
and the services alike."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from heterps_core.limits import LIMITS

# The default for a plan with a spot stage: enough for the interruptions a spot plan is
# priced for over a typical job (a few), few enough that a type whose spot capacity keeps
# vanishing stops and asks a person. On-demand plans: 0 (no spot notice stops them).
SPOT_DEFAULT = 3
MAX_RESTARTS = int(LIMITS["max_restarts"].high)


def has_spot_stage(plan: dict[str, Any]) -> bool:
    return any(s.get("market") == "spot" for s in plan.get("stages") or [])


def default_max_restarts(plan: dict[str, Any]) -> int:
    """SPOT_DEFAULT when the plan runs a stage on spot units, else 0."""
    return SPOT_DEFAULT if has_spot_stage(plan) else 0


def clean_max_restarts(value: Any) -> int:
    """A whole number in 0..MAX_RESTARTS; ValidationError on `max_restarts`."""
    if type(value) is not int or not 0 <= value <= MAX_RESTARTS:
        raise ValidationError({"max_restarts": f"must be a whole number of restarts in "
                                               f"0..{MAX_RESTARTS}, got {repr(value)[:40]}"})
    return value
