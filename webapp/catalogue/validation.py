"""The one validation of a resource type, shared by pages, API, admin and the model's
`clean`: heterps_core's own catalogue validator (`ResourceKind.from_dict`, the one
profiling and planning use) and the core's documented ranges, so whatever is stored here is
something the planner accepts, and a problem names the field here instead of
`resources[2].price_per_hour` minutes later."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from django.core.exceptions import ValidationError

from heterps_core import limits
from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.catalogue import KINDS, CatalogueError, ResourceKind, check_precision

FIELDS = ("name", "kind", "price_per_hour", "count", "memory_gb", "network_gbps")
# A spot offer (issue 26): all empty, or a spot price with its interruption rate.
MARKET = ("spot_price", "interruptions_per_hour", "restart_s")
OPTIONAL = ("precision", *MARKET)  # precision blank: the hardware entry's own (issue 21)
ALL_FIELDS = FIELDS + OPTIONAL
NUMBERS = ("price_per_hour", "count", "memory_gb", "network_gbps")  # ranges: heterps_core.limits
NAME_MAX = 60
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
NAME_RULE = (f"use 1-{NAME_MAX} letters, digits, '.', '_' or '-' (it names the resource in "
             "plans and bindings)")
_NAME = re.compile(NAME_PATTERN)
DEFAULT_RESTART_S = 120.0  # spot_defaults.RESTART_S: an assumption until measured


def clean(data: dict[str, Any]) -> dict[str, Any]:
    """The six fields of a resource type (and its optional precision), checked by the core's
    catalogue validator and the core's documented ranges (heterps_core.limits);
    ValidationError({field: problem}) names the field."""
    missing = [f for f in FIELDS if data.get(f) in (None, "")]
    if missing:
        raise ValidationError({f: "this field is required" for f in missing})
    name = str(data["name"]).strip()
    if len(name) > NAME_MAX or not _NAME.match(name):
        raise ValidationError({"name": NAME_RULE})
    kind = str(data["kind"]).strip().lower()
    if kind not in KINDS:
        raise ValidationError({"kind": f"must be one of {', '.join(KINDS)}, got {kind!r}"})
    values: dict[str, Any] = {"name": name, "kind": kind}
    for field in NUMBERS:
        values[field] = _number(data[field], field)
    # Only the fields a project sets are checked; the specs behind estimates come from a
    # default kind (catalogue.hardware), so any entry of the same kind stands in here.
    base = next(k for k in default_catalogue().kinds if k.kind == kind)
    entry = replace(base, **values).to_dict()
    try:
        checked = ResourceKind.from_dict(entry, where=name)
    except CatalogueError as exc:
        field = exc.field.removeprefix(f"{name}.")
        raise ValidationError({field if field in FIELDS else "__all__": exc.problem}) from exc
    for field in NUMBERS:  # the documented ranges every entry point shares
        try:
            limits.check(field, getattr(checked, field))
        except InstanceError as exc:
            raise ValidationError({field: exc.problem}) from exc
    return {"name": checked.name, "kind": checked.kind,
            "price_per_hour": checked.price_per_hour, "count": checked.count,
            "memory_gb": checked.memory_gb, "network_gbps": checked.network_gbps,
            "precision": _precision(data.get("precision"), checked.kind),
            **market(data)}


def market(data: dict[str, Any]) -> dict[str, float | None]:
    """The spot offer's three fields (all None: on-demand only), each checked against the
    core's ranges; ValidationError names every field with a problem."""
    given = {f: data.get(f) for f in MARKET if data.get(f) not in (None, "")}
    if "spot_price" not in given:
        if given:
            raise ValidationError({f: "needs a spot price (spot_price); leave it empty for "
                                      "on-demand only" for f in given})
        return dict.fromkeys(MARKET)
    values: dict[str, float | None] = {}
    problems: dict[str, str] = {}
    if "interruptions_per_hour" not in given:
        problems["interruptions_per_hour"] = ("required with a spot price (interruptions per "
                                              "unit-hour, greater than 0)")
    for field, value in given.items():
        try:
            values[field] = limits.check(field, _number(value, field))
        except ValidationError as exc:
            problems[field] = " ".join(exc.message_dict[field])
        except InstanceError as exc:
            problems[field] = exc.problem
    if problems:
        raise ValidationError(problems)
    # restart_s left empty stays None: measured from the type's runs, else assumed
    # (ResourceType.restart()).
    return {f: values.get(f) for f in MARKET}


def _precision(value: Any, kind: str) -> str:
    """'' (the hardware entry's own), fp32, tf32 or amp (bf16/fp16 read as amp); a CPU type
    trains in fp32, so only a GPU type takes another."""
    text = str(value or "").strip().lower()
    if not text:
        return ""
    try:
        precision = check_precision(text)
    except CatalogueError as exc:
        raise ValidationError({"precision": exc.problem}) from exc
    if kind != "gpu" and precision != "fp32":
        raise ValidationError({"precision": f"{precision} applies to GPU types; a {kind} type "
                                            "trains in fp32"})
    return precision


def _number(value: Any, field: str) -> float | int:
    if isinstance(value, bool):
        raise ValidationError({field: f"must be a number, got {value!r}"})
    if isinstance(value, int | float):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ValidationError({field: f"must be a number, got {value!r}"}) from None
    return int(number) if field == "count" and number.is_integer() else number

