"""Typed, bounded parameters of a sync mode: validated here, and a schema the web form reads."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heterps_core.dataparallel.errors import DataParallelError

_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool}


@dataclass(frozen=True)
class Param:
    """One knob of a sync mode. `kind` is "int", "float" or "bool"; bounds are inclusive.
    `name` is what the API and the CLI take; `label` is what a form shows a person."""

    name: str
    kind: str
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    label: str = ""

    @property
    def words(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    def to_schema(self) -> dict[str, Any]:
        """A JSON-schema-like description, enough to generate a form field."""
        schema: dict[str, Any] = {
            "type": {"int": "integer", "float": "number", "bool": "boolean"}[self.kind],
            "default": self.default,
            "description": self.help,
        }
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema

    def coerce(self, value: Any, field: str) -> Any:
        """`value` as this parameter's type, or a `DataParallelError` naming `field`."""
        if self.kind == "bool":
            return _as_bool(value, field)
        try:
            if isinstance(value, bool):
                raise ValueError
            number = _TYPES[self.kind](value)
        except (TypeError, ValueError):
            expected = "an integer" if self.kind == "int" else "a number"
            raise DataParallelError(field, f"must be {expected}, got {value!r}") from None
        if self.kind == "int" and isinstance(value, float) and not value.is_integer():
            raise DataParallelError(field, f"must be an integer, got {value!r}")
        if isinstance(number, float) and not math.isfinite(number):
            raise DataParallelError(field, f"must be finite, got {value!r}")
        if self.minimum is not None and number < self.minimum:
            raise DataParallelError(field, f"must be >= {self.minimum}, got {number}")
        if self.maximum is not None and number > self.maximum:
            raise DataParallelError(field, f"must be <= {self.maximum}, got {number}")
        return number


def resolve(params: tuple[Param, ...], given: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """Defaults overlaid with `given`, each value checked; unknown names are refused."""
    known = {p.name: p for p in params}
    for name in given:
        if name not in known:
            names = ", ".join(sorted(known)) or "none"
            raise DataParallelError(f"{prefix}.{name}", f"unknown parameter; known: {names}")
    return {
        p.name: p.coerce(given[p.name], f"{prefix}.{p.name}") if p.name in given else p.default
        for p in params
    }


def _as_bool(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise DataParallelError(field, f"must be true or false, got {value!r}")
