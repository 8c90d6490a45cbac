"""Model rules: register a zoo entry, bring your own model (an allow-listed factory, traced
into its chain), import a layer chain (optionally with timings measured elsewhere, which plan
without profiling). Views and the API call these."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError

from heterps_core import zoo
from heterps_core.zoo.base import chain_of
from heterps_core.zoo.sizes import sizes_of
from webapp.modelzoo import loading
from webapp.modelzoo.models import RegisteredModel, Source
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check
from webapp.refusals import StateRefusal, by_state

LAYER_KINDS = ("embedding", "sparse", "dense")
MAX_IMPORTED_LAYERS = 500
MAX_TIMING_BATCH = 1_000_000
# Per-layer figures a timed chain may carry (the planning instance's own layer fields).
TIMED_SIZES = ("output_mb", "sync_mb", "memory_gb")


def zoo_catalogue() -> list[dict[str, Any]]:
    """Every zoo entry a user can add, with its description, default batch size and sizes."""
    entries = []
    for name in zoo.names():
        entry = zoo.get(name)
        entries.append({"name": name, "description": entry.description,
                        "default_batch_size": entry.default_batch_size,
                        "sizes": list(sizes_of(name))})
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
    user: AnyUser, project: Project, zoo_name: str, size: str = "tiny",
    name: str = "",
) -> RegisteredModel:
    """Register zoo entry `zoo_name` at `size`; adding the same one twice returns the first."""
    check(user, project, Action.EDIT)
    if zoo_name not in zoo.names():
        raise ValidationError({"zoo_name": f"no zoo model {zoo_name!r}; known: "
                                            f"{', '.join(zoo.names())}"})
    if size not in sizes_of(zoo_name):
        raise ValidationError({"size": f"{zoo_name} comes in {', '.join(sizes_of(zoo_name))}; "
                                       f"not {size!r}"})
    name = name.strip() or f"{zoo_name}-{size}"
    existing = RegisteredModel.objects.filter(project=project, name=name).first()
    if existing is not None:
        if existing.zoo_name == zoo_name and existing.size == size:
            return existing
        raise StateRefusal({"name": f"a model called {name!r} already exists in this project"})
    entry = zoo.get(zoo_name)
    layers = zoo_chain(zoo_name, size)
    return RegisteredModel.objects.create(
        project=project, name=name, source=Source.ZOO, zoo_name=zoo_name, size=size,
        description=size_description(entry.description, size, entry.config(size), layers),
        default_batch_size=entry.default_batch_size, layers=layers,
    )


def size_description(layout: str, size: str, config: Any, layers: list[dict[str, Any]]) -> str:
    """The zoo entry's layout, then what this size actually holds (a tiny build is not the
    production model its layout line describes)."""
    params = sum(int(layer["parameters"]) for layer in layers)
    tables = len(config.vocab_sizes)
    rows = sum(int(v) for v in config.vocab_sizes)
    built = f"{tables} tables, {rows:,} rows in all, " if tables else ""
    return (f"{layout} (layout). This {size} build: {built}{len(layers)} layers, "
            f"{params:,} parameters.")


def add_factory_model(
    user: AnyUser, project: Project, factory: str, name: str = "",
    example_input: str = "", description: str = "",
) -> RegisteredModel:
    """Bring your own model: an allow-listed factory, traced with torch.fx into the layer
    chain the planner sees (refused, with what to change, when it cannot be split)."""
    check(user, project, Action.EDIT)
    from heterps_core.zoo.base import layer_specs
    from heterps_core.zoo.imported import ModelImportError

    loading.check_factory(factory)  # the allow-list: the schema's choice, a 400
    name = name.strip() or factory.rpartition(":")[2]
    if RegisteredModel.objects.filter(project=project, name=name).exists():
        raise StateRefusal({"name": f"a model called {name!r} already exists in this project"})
    # What the factory's code makes of the example (its forward(), its chain) the schema
    # cannot know: the operator's code decides, a 409.
    with by_state():
        built = loading.factory_model(factory, example_input)
        check_example(built)
        try:
            chain = layer_specs(built.build(built.config()))
        except ModelImportError as exc:
            raise ValidationError({"factory": str(exc)}) from exc
    layers = [{"index": i, "name": spec.name, "kind": spec.kind, "parameters": spec.parameters,
               "shardable": spec.shardable} for i, spec in enumerate(chain)]
    return RegisteredModel.objects.create(
        project=project, name=name, source=Source.FACTORY, factory=built.spec,
        example_input=built.example_input,
        description=description.strip() or f"{built.description} (traced from {built.spec})",
        default_batch_size=built.default_batch_size, layers=layers,
    )


def check_example(built: Any) -> None:
    """Run the factory's module once on its example input, before tracing it: an example
    that does not fit forward() is the example's fault, said so on that field, not "cannot
    split into a layer chain" with torch.fx's dump of the graph (issue 25.11)."""
    import torch

    from heterps_core.zoo.imported import (
        ModelImportError,
        forward_arg_names,
        parse_example_input,
    )

    with torch.random.fork_rng():
        module = built.module(0)
        try:
            inputs = parse_example_input(built.example_input, module)
        except ModelImportError as exc:
            raise ValidationError({"example_input": str(exc)}) from exc
        try:
            with torch.no_grad():
                module(**inputs)
        except Exception as exc:  # whatever forward() raises on inputs it does not take
            given = "; ".join(f"{name}={str(value.dtype).removeprefix('torch.')}"
                              f"{list(value.shape)}" for name, value in inputs.items())
            reason = (str(exc).strip().splitlines() or [""])[0][:300]
            raise ValidationError({"example_input": (
                f"forward({', '.join(forward_arg_names(module))}) of {built.spec} does not run "
                f"on this example input ({given}): {type(exc).__name__}: {reason}. Give the "
                "shapes and dtypes forward() takes (the first dimension is the batch)")}) from None


def import_model(
    user: AnyUser, project: Project, name: str, chain_json: str,
    description: str = "",
) -> RegisteredModel:
    """Register an imported model from its layer chain (JSON list of layers)."""
    check(user, project, Action.EDIT)
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if RegisteredModel.objects.filter(project=project, name=name).exists():
        raise StateRefusal({"name": f"a model called {name!r} already exists in this project"})
    layers, batch_size = parse_chain(chain_json)
    return RegisteredModel.objects.create(
        project=project, name=name, source=Source.IMPORTED, description=description,
        layers=layers, **({"default_batch_size": batch_size} if batch_size else {}),
    )


def parse_chain(text: str) -> tuple[list[dict[str, Any]], int | None]:
    """A layer chain from JSON: a list of layers, or {"batch_size": N, "layers": [...]} whose
    layers carry timings measured elsewhere (`compute_s`: resource type -> fwd+bwd seconds
    per batch of N, plus `output_mb`, `sync_mb`, `memory_gb`). ValidationError naming
    `layers[i].field` on bad input. Returns the layers and the timings' batch size."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            {"layers": f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"}
        ) from exc
    batch_size = None
    if isinstance(raw, dict):
        unknown = sorted(set(raw) - {"batch_size", "layers"})
        if unknown:
            raise ValidationError({"layers": f"unknown field(s) {', '.join(unknown)}; give "
                                             '{"batch_size": N, "layers": [...]}'})
        batch_size = raw.get("batch_size")
        if (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                or not 1 <= batch_size <= MAX_TIMING_BATCH):
            raise ValidationError({"layers.batch_size": (
                f"must be the whole number of samples per batch the timings are for "
                f"(1..{MAX_TIMING_BATCH:,})")})
        raw = raw.get("layers")
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
        layer = {"index": i, "name": name, "kind": kind, "parameters": parameters,
                 "shardable": shardable}
        layer.update(_timings(item, where))
        layers.append(layer)
    timed = [("compute_s" in layer) for layer in layers]
    if any(timed) and not all(timed):
        first = timed.index(False)
        raise ValidationError({f"layers[{first}].compute_s": "every layer needs timings once "
                                                             "one has them"})
    if any(timed) and batch_size is None:
        raise ValidationError({"layers.batch_size": 'timings need the batch size they are '
                                                    'for: {"batch_size": N, "layers": [...]}'})
    return layers, batch_size


def _timings(item: dict[str, Any], where: str) -> dict[str, Any]:
    if "compute_s" not in item:
        extra = [k for k in TIMED_SIZES if k in item]
        if extra:
            raise ValidationError({f"{where}.compute_s": f"{extra[0]} given without compute_s"})
        return {}
    compute = item["compute_s"]
    if not isinstance(compute, dict) or not compute:
        raise ValidationError({f"{where}.compute_s": "must map resource type names to "
                                                     "seconds per batch"})
    timings: dict[str, Any] = {"compute_s": {}}
    for resource, seconds in compute.items():
        timings["compute_s"][str(resource)] = _figure(seconds, f"{where}.compute_s.{resource}",
                                                      positive=True)
    for key in TIMED_SIZES:
        timings[key] = _figure(item.get(key, 0.0), f"{where}.{key}", positive=False)
    return timings


def _figure(value: Any, where: str, positive: bool) -> float:
    import math

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError({where: f"must be a number, got {value!r}"})
    if value < 0 or (positive and value == 0) or value > 1e6:
        raise ValidationError({where: "must be " + ("greater than 0" if positive else ">= 0")
                                      + " and at most 1e6"})
    return float(value)


def timed_instance(
    model: RegisteredModel, resource_types: list[Any], batch_size: int, target: float,
    samples: float | None,
) -> tuple[Any, list[dict[str, Any]]]:
    """The planning instance of a chain imported with its own timings, on these resource
    types, and the provenance of each figure ("given", at the import). Resource types a layer
    has no timing for are not offered to that layer."""
    from heterps_core.errors import InstanceError
    from heterps_core.instance import SCHEMA_VERSION, Instance

    if batch_size != model.default_batch_size:
        raise ValidationError({"batch_size": f"{model.name}'s timings are for batches of "
                                             f"{model.default_batch_size}; plan at that size"})
    names = [r.name for r in resource_types]
    layers, provenance = [], []
    for layer in model.layers:
        compute = {r: s for r, s in layer["compute_s"].items() if r in names}
        if not compute:
            raise ValidationError({"cluster": (
                f"layer {layer['name']} has timings for {', '.join(layer['compute_s'])} only; "
                f"the cluster has {', '.join(names)}")})
        layers.append({"name": layer["name"], "kind": layer["kind"], "compute_s": compute,
                       "output_mb": layer["output_mb"], "sync_mb": layer["sync_mb"],
                       "memory_gb": layer["memory_gb"], "shardable": layer["shardable"]})
        provenance += [{"layer": layer["name"], "resource": r, "seconds": s, "source": "given",
                        "device": r, "at": model.created_at.isoformat()}
                       for r, s in compute.items()]
    data: dict[str, Any] = {
        "version": SCHEMA_VERSION, "name": f"{model.name} (given timings)",
        "batch_size": batch_size, "throughput_target": target,
        "resources": [r.to_core().to_dict() for r in resource_types], "layers": layers,
    }
    if samples is not None:
        data["samples"] = samples
    try:
        return Instance.from_dict(data), provenance
    except InstanceError as exc:
        raise ValidationError({"throughput_target" if "target" in exc.field else "model":
                               str(exc)}) from exc
