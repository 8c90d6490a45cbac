"""The only door from the web app to the code loader.

The runtime and profiler accept model references that import code (`package.module:Class`,
`path/file.py:Class`, `package.module:factory`); that is right for a person at the command
line, and wrong for text typed into a page, the API or the admin. Everything the web app hands
to them goes through here: a zoo entry's name, or a factory the operator put on the
allow-list (settings.MODEL_FACTORIES). Anything else is refused before it is imported.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from heterps_core import zoo
from webapp.modelzoo.sources import Source


def allowed_factories() -> tuple[str, ...]:
    return tuple(getattr(settings, "MODEL_FACTORIES", ()))


def check_factory(spec: str) -> str:
    spec = (spec or "").strip()
    allowed = allowed_factories()
    if spec not in allowed:
        listed = ", ".join(allowed) if allowed else "none (HETERPS_MODEL_FACTORIES is empty)"
        raise ValidationError({"factory": (
            f"{spec!r} is not on this server's allow-list of model factories; allowed: "
            f"{listed}. An operator adds one with HETERPS_MODEL_FACTORIES")})
    return spec


def runnable(reference: str, field: str = "model_name") -> str:
    """`reference` if the runtime may build it: a zoo name or an allow-listed factory."""
    if reference in zoo.names() or reference in allowed_factories():
        return reference
    raise ValidationError({field: (
        f"{reference!r} is neither a zoo model nor an allow-listed factory; the server "
        "loads no other code")})


def factory_model(spec: str, example_input: str = "") -> Any:
    """The allow-listed factory as a zoo-like model (heterps_core.zoo.imported)."""
    from heterps_core.zoo.imported import FactoryModel, ModelImportError

    spec = check_factory(spec)
    try:
        return FactoryModel(spec, example_input.strip() or None)
    except ModelImportError as exc:
        field = "example_input" if "example input" in str(exc) else "factory"
        raise ValidationError({field: str(exc)}) from exc


def model_for(model: Any) -> Any:
    """The zoo entry or factory model behind a RegisteredModel, through the allow-list."""
    if model.source == Source.FACTORY:
        return factory_model(model.factory, model.example_input)
    if model.source == Source.ZOO:
        return zoo.get(runnable(model.zoo_name, "zoo_name"))
    raise ValidationError({"model": f"{model.name} is an imported layer chain: it carries no "
                                    "code to build, profile or run"})


def check_model_fields(model: Any) -> None:
    """A RegisteredModel's code-naming fields, as the admin's form validates them."""
    if model.source == Source.ZOO and model.zoo_name not in zoo.names():
        raise ValidationError({"zoo_name": (
            f"{model.zoo_name!r} is not a zoo model; known: {', '.join(zoo.names())}")})
    if model.source == Source.FACTORY:
        check_factory(model.factory)
    if model.source != Source.FACTORY and model.factory:
        raise ValidationError({"factory": "only a model of source factory names a factory"})


def profile(model: Any, options: Any, batch_size: int, progress: Any) -> Any:
    """heterps_core's profile of a zoo entry or allow-listed factory, layer by layer."""
    from heterps_core.profiler import profile_zoo_model
    from heterps_core.profiler.chain import profile_chain
    built = model_for(model)  # refuses anything off the allow-list before importing it
    if model.source == Source.ZOO:
        return profile_zoo_model(built.name, options, size=model.size or "tiny",
                                 batch_size=batch_size, progress=progress)
    config = built.config()
    return profile_chain(built.build(config), next(built.batches(config, batch_size)),
                         options, name=model.name, size="custom", progress=progress)
