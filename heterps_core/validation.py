"""Field validators for untrusted JSON: each failure names the field and the problem.

Shared by the instance format and the hardware catalogue. `error` lets a caller raise its own
`InstanceError` subclass.
"""

from __future__ import annotations

import math
from typing import Any

from heterps_core.errors import InstanceError


def check_fields(
    item: Any, where: str, spec: dict[str, bool], error: type[InstanceError] = InstanceError
) -> None:
    """`spec` maps each allowed key to whether it is required; unknown keys are rejected."""
    if not isinstance(item, dict):
        raise error(where or "instance", "must be a JSON object")
    prefix = f"{where}." if where else ""
    for key in item:
        if key not in spec:
            raise error(f"{prefix}{key}", "unknown field")
    for key, required in spec.items():
        if required and key not in item:
            raise error(f"{prefix}{key}", "missing required field")


def non_empty_string(
    value: Any, where: str, error: type[InstanceError] = InstanceError
) -> str:
    if not isinstance(value, str) or not value.strip():
        raise error(where, "must be a non-empty string")
    return value


def number(value: Any, where: str, error: type[InstanceError] = InstanceError) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(where, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise error(where, f"must be finite, got {value!r}")
    return float(value)


def positive_number(value: Any, where: str, error: type[InstanceError] = InstanceError) -> float:
    result = number(value, where, error)
    if result <= 0:
        raise error(where, f"must be greater than 0, got {value!r}")
    return result


def non_negative_number(
    value: Any, where: str, error: type[InstanceError] = InstanceError
) -> float:
    result = number(value, where, error)
    if result < 0:
        raise error(where, f"must not be negative, got {value!r}")
    return result


def positive_int(value: Any, where: str, error: type[InstanceError] = InstanceError) -> int:
    result = positive_number(value, where, error)
    if result != int(result):
        raise error(where, f"must be a whole number, got {value!r}")
    return int(result)


def fraction(value: Any, where: str, error: type[InstanceError] = InstanceError) -> float:
    """A number in (0, 1]."""
    result = positive_number(value, where, error)
    if result > 1:
        raise error(where, f"must be at most 1, got {value!r}")
    return result
