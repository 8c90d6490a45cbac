"""Model rules: register a zoo entry, import a layer chain. Views and the API call these."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError

from heterps_core import zoo
from heterps_core.zoo.base import chain_of
from heterps_core.zoo.sizes import SIZES
from webapp.modelzoo.models import RegisteredModel, Source
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check

LAYER_KINDS = ("embedding", "sparse", "dense")
MAX_IMPORTED_LAYERS = 500


def zoo_catalogue() -> list[dict[str, Any]]:
    """Every zoo entry a user can add, with its description and default batch size."""
    entries = []
    for name in zoo.names():
        entry = zoo.get(name)
        entries.append({"name": name, "description": entry.description,
                        "default_batch_size": entry.default_batch_size})
    return entries


def zoo_chain(zoo_name: str, size: str) -> list[dict[str, Any]]:
    """The planner-visible chain of a zoo entry (built on the meta device: costs no memory)."""
    entry = zoo.get(zoo_name)
    return [
        {"index": i, "name": spec.name, "kind": spec.kind, "parameters": spec.parameters,
         "shardable": spec.shardable}
        for i, spec in enumerate(chain_of(entry, entry.config(size)))
    ]


def add_zoo_model(
    user: AbstractBaseUser | AnyUser, project: Project, zoo_name: str, size: str = "tiny",
    name: str = "",
) -> RegisteredModel:
    """Register zoo entry `zoo_name` at `size`; adding the same one twice returns the first."""
    check(user, project, Action.EDIT)
    if zoo_name not in zoo.names():
        raise ValidationError({"zoo_name": f"no zoo model {zoo_name!r}; known: "
                                            f"{', '.join(zoo.names())}"})
    if size not in SIZES:
        raise ValidationError({"size": f"must be one of {', '.join(SIZES)}, got {size!r}"})
    name = name.strip() or f"{zoo_name}-{size}"
    existing = RegisteredModel.objects.filter(project=project, name=name).first()
    if existing is not None:
        if existing.zoo_name == zoo_name and existing.size == size:
            return existing
        raise ValidationError({"name": f"a model called {name!r} already exists in this project"})
    entry = zoo.get(zoo_name)
    return RegisteredModel.objects.create(
        project=project, name=name, source=Source.ZOO, zoo_name=zoo_name, size=size,
        description=entry.description, default_batch_size=entry.default_batch_size,
        layers=zoo_chain(zoo_name, size),
    )


def import_model(
    user: AbstractBaseUser | AnyUser, project: Project, name: str, chain_json: str,
    description: str = "",
) -> RegisteredModel:
    """Register an imported model from its layer chain (JSON list of layers)."""
    check(user, project, Action.EDIT)
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if RegisteredModel.objects.filter(project=project, name=name).exists():
        raise ValidationError({"name": f"a model called {name!r} already exists in this project"})
    layers = parse_chain(chain_json)
    return RegisteredModel.objects.create(
        project=project, name=name, source=Source.IMPORTED, description=description,
        layers=layers,
    )


def parse_chain(text: str) -> list[dict[str, Any]]:
    """A layer chain from JSON; ValidationError naming `layers[i].field` on bad input."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            {"layers": f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"}
        ) from exc
    if not isinstance(raw, list) or not raw:
        raise ValidationError({"layers": "must be a non-empty JSON list of layers"})
    if len(raw) > MAX_IMPORTED_LAYERS:
        raise ValidationError({"layers": f"at most {MAX_IMPORTED_LAYERS} layers"})
    layers, seen = [], set()
    for i, item in enumerate(raw):
        where = f"layers[{i}]"
        if not isinstance(item, dict):
            raise ValidationError({where: "must be a JSON object"})
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError({f"{where}.name": "must be a non-empty string"})
        if name in seen:
            raise ValidationError({f"{where}.name": f"duplicate layer name {name!r}"})
        seen.add(name)
        kind = item.get("kind", "dense")
        if kind not in LAYER_KINDS:
            raise ValidationError({f"{where}.kind": f"must be one of {', '.join(LAYER_KINDS)}"})
        parameters = item.get("parameters", 0)
        if isinstance(parameters, bool) or not isinstance(parameters, int) or parameters < 0:
            raise ValidationError({f"{where}.parameters": "must be a whole number >= 0"})
        shardable = item.get("shardable", kind != "dense")
        if not isinstance(shardable, bool):
            raise ValidationError({f"{where}.shardable": "must be true or false"})
        layers.append({"index": i, "name": name, "kind": kind, "parameters": parameters,
                       "shardable": shardable})
    return layers
