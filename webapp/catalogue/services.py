"""Resource-type rules: one validation for pages, API and admin; create, edit and delete
with the checks that protect plans and running jobs; the hardware catalogue to start from.

Validation goes through heterps_core's own catalogue validator (`ResourceKind.from_dict`, the
one profiling and planning use), so whatever is stored here is something the planner
accepts, and a problem names the field here instead of `resources[2].price_per_hour` minutes
later.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core.hardware import default_catalogue
from heterps_core.hardware.catalogue import ResourceKind
from webapp.catalogue.models import ResourceType
from webapp.catalogue.spot_defaults import spot_default
from webapp.catalogue.usage import RUNNING_USERS
from webapp.catalogue.validation import (  # noqa: F401  (the rules pages and API share)
    ALL_FIELDS,
    FIELDS,
    MARKET,
    NAME_MAX,
    clean,
)
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check
from webapp.refusals import StateRefusal


def hardware_catalogue() -> list[dict[str, Any]]:
    """The default hardware kinds a user can start from (specs, list price, source), each
    with its default spot offer, labelled as a default (`spot_source`)."""
    return [{**kind.to_dict(), **spot_default(kind)} for kind in default_catalogue().kinds]


def template(name: str) -> ResourceKind:
    for kind in default_catalogue().kinds:
        if kind.name == name:
            return kind
    known = ", ".join(default_catalogue().names)
    raise ValidationError({"template": f"no catalogue entry {name!r}; known: {known}"})


def create(user: AnyUser, project: Project,
           data: dict[str, Any]) -> ResourceType:
    """A new resource type; fields left empty are taken from `data["template"]` (a
    hardware-catalogue entry) when one is named."""
    check(user, project, Action.EDIT)
    data = _with_template(data)
    values = clean(data)
    with transaction.atomic():
        if ResourceType.objects.filter(project=project, name=values["name"]).exists():
            raise StateRefusal({"name": f"a resource type called {values['name']!r} "
                                        "already exists in this project"})
        return ResourceType.objects.create(project=project, **values)


def update(user: AnyUser, resource_type: ResourceType,
           data: dict[str, Any]) -> ResourceType:
    check(user, resource_type.project_id, Action.EDIT)
    merged = {f: getattr(resource_type, f) for f in ALL_FIELDS}
    if "spot_price" in data and data["spot_price"] in (None, ""):
        # Clearing the spot price withdraws the offer: its rate and restart go with it
        # unless the same edit sets them (which `clean` then refuses, naming them).
        merged.update(dict.fromkeys(MARKET))
    merged.update({k: v for k, v in data.items() if k in ALL_FIELDS})
    try:
        values = clean(merged)
    except StateRefusal:
        raise
    except ValidationError as exc:
        # The body passed its own rules (the API's serializer and schema state them); what
        # is refused now is the edit together with the stored type (amp precision on a CPU
        # type, a spot rate on a type without a spot price): the present state's refusal.
        raise StateRefusal(exc.message_dict) from None
    with transaction.atomic():
        locked = ResourceType.objects.select_for_update().get(pk=resource_type.pk)
        _refuse_while_running(locked, "changed")
        if values["name"] != locked.name and ResourceType.objects.filter(
                project_id=locked.project_id, name=values["name"]).exists():
            raise StateRefusal({"name": f"a resource type called {values['name']!r} "
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
            raise StateRefusal({"resource_type": (
                f"{locked.name} is the only resource type of cluster(s) {', '.join(alone)}; "
                "add another type to them or delete them first")})
        locked.delete()


def usage(resource_type: ResourceType) -> dict[str, Any]:
    """What uses a resource type, for the page's delete confirmation."""
    return {"clusters": [c.name for c in resource_type.clusters.all()],
            "running_jobs": _running_jobs(resource_type)}


def _refuse_while_running(resource_type: ResourceType, what: str) -> None:
    jobs = _running_jobs(resource_type)
    if jobs:
        ids = ", ".join(f"#{pk}" for pk in jobs)
        raise StateRefusal({"resource_type": (
            f"{resource_type.name} is used by running job(s) {ids}; it can be {what} once "
            "they finish or are cancelled")})


def _running_jobs(resource_type: ResourceType) -> list[int]:
    return sorted(pk for check in RUNNING_USERS for pk in check(resource_type))


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
