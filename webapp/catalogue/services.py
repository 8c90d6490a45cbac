"""Resource-type rules: one validation for pages, API and admin; create, edit and delete
with the checks that protect plans and running jobs; the hardware catalogue to start from.

Validation goes through heterps_core's own catalogue validator (`ResourceKind.from_dict`, the
one profiling and planning use), so whatever is stored here is something the planner
accepts, and a problem names the field here instead of `resources[2].price_per_hour` minutes
later.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core import limits
from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.catalogue import KINDS, CatalogueError, ResourceKind, check_precision
from webapp.catalogue.models import ResourceType
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check

FIELDS = ("name", "kind", "price_per_hour", "count", "memory_gb", "network_gbps")
OPTIONAL = ("precision",)  # blank: the hardware entry's own (issue 21)
ALL_FIELDS = FIELDS + OPTIONAL
NUMBERS = ("price_per_hour", "count", "memory_gb", "network_gbps")  # ranges: heterps_core.limits
NAME_MAX = 60
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def hardware_catalogue() -> list[dict[str, Any]]:
    """The default hardware kinds a user can start from (specs, list price, source)."""
    return [kind.to_dict() for kind in default_catalogue().kinds]


def template(name: str) -> ResourceKind:
    for kind in default_catalogue().kinds:
        if kind.name == name:
            return kind
    known = ", ".join(default_catalogue().names)
    raise ValidationError({"template": f"no catalogue entry {name!r}; known: {known}"})


def clean(data: dict[str, Any]) -> dict[str, Any]:
    """The six fields of a resource type (and its optional precision), checked by the core's
    catalogue validator and the core's documented ranges (heterps_core.limits);
    ValidationError({field: problem}) names the field."""
    missing = [f for f in FIELDS if data.get(f) in (None, "")]
    if missing:
        raise ValidationError({f: "this field is required" for f in missing})
    name = str(data["name"]).strip()
    if len(name) > NAME_MAX or not _NAME.match(name):
        raise ValidationError({"name": f"use 1-{NAME_MAX} letters, digits, '.', '_' or '-' "
                                       "(it names the resource in plans and bindings)"})
    kind = str(data["kind"]).strip().lower()
    if kind not in KINDS:
        raise ValidationError({"kind": f"must be one of {', '.join(KINDS)}, got {kind!r}"})
    values: dict[str, Any] = {"name": name, "kind": kind}
    for field in NUMBERS:
        values[field] = _number(data[field], field)
    # Only the fields a project sets are checked; the specs behind estimates come from a
    # default kind (profiling.hardware), so any entry of the same kind stands in here.
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
            "precision": _precision(data.get("precision"), checked.kind)}


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


def create(user: AnyUser, project: Project,
           data: dict[str, Any]) -> ResourceType:
    """A new resource type; fields left empty are taken from `data["template"]` (a
    hardware-catalogue entry) when one is named."""
    check(user, project, Action.EDIT)
    data = _with_template(data)
    values = clean(data)
    with transaction.atomic():
        if ResourceType.objects.filter(project=project, name=values["name"]).exists():
            raise ValidationError({"name": f"a resource type called {values['name']!r} "
                                           "already exists in this project"})
        return ResourceType.objects.create(project=project, **values)


def update(user: AnyUser, resource_type: ResourceType,
           data: dict[str, Any]) -> ResourceType:
    check(user, resource_type.project_id, Action.EDIT)
    merged = {f: getattr(resource_type, f) for f in ALL_FIELDS}
    merged.update({k: v for k, v in data.items() if k in ALL_FIELDS})
    values = clean(merged)
    with transaction.atomic():
        locked = ResourceType.objects.select_for_update().get(pk=resource_type.pk)
        _refuse_while_running(locked, "changed")
        if values["name"] != locked.name and ResourceType.objects.filter(
                project_id=locked.project_id, name=values["name"]).exists():
            raise ValidationError({"name": f"a resource type called {values['name']!r} "
                                           "already exists in this project"})
        for field, value in values.items():
            setattr(locked, field, value)
        locked.save()
    return locked


def delete(user: AnyUser, resource_type: ResourceType) -> None:
    """Refused while a running job uses it, or when a cluster would be left with nothing.
    Plans made earlier keep their own copy of the resource (their instance JSON)."""
    check(user, resource_type.project_id, Action.EDIT)
    with transaction.atomic():
        locked = ResourceType.objects.select_for_update().get(pk=resource_type.pk)
        _refuse_while_running(locked, "deleted")
        alone = [c.name for c in locked.clusters.all() if c.resource_types.count() == 1]
        if alone:
            raise ValidationError({"resource_type": (
                f"{locked.name} is the only resource type of cluster(s) {', '.join(alone)}; "
                "add another type to them or delete them first")})
        locked.delete()


def usage(resource_type: ResourceType) -> dict[str, Any]:
    """What uses a resource type, for the page's delete confirmation."""
    return {"clusters": [c.name for c in resource_type.clusters.all()],
            "running_jobs": [j.pk for j in _running_jobs(resource_type)]}


def _refuse_while_running(resource_type: ResourceType, what: str) -> None:
    jobs = _running_jobs(resource_type)
    if jobs:
        ids = ", ".join(f"#{j.pk}" for j in jobs)
        raise ValidationError({"resource_type": (
            f"{resource_type.name} is used by running job(s) {ids}; it can be {what} once "
            "they finish or are cancelled")})


def _running_jobs(resource_type: ResourceType) -> list[Any]:
    from webapp.jobs.models import ACTIVE, Job  # jobs depend on the catalogue, not back

    jobs = Job.objects.filter(project_id=resource_type.project_id,
                              work__status__in=ACTIVE).only("pk", "plan")
    return [j for j in jobs if any(s.get("resource") == resource_type.name
                                   for s in (j.plan or {}).get("stages", []))]


def _with_template(data: dict[str, Any]) -> dict[str, Any]:
    name = str(data.get("template") or "").strip()
    if not name:
        return data
    base = template(name)
    filled = dict(data)
    defaults = {"name": base.name, "kind": base.kind, "price_per_hour": base.price_per_hour,
                "count": base.count, "memory_gb": base.memory_gb,
                "network_gbps": base.network_gbps}
    for field, value in defaults.items():
        if filled.get(field) in (None, ""):
            filled[field] = value
    return filled


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

