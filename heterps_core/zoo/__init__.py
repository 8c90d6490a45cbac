"""The model zoo: name -> `ZooModel`, one registry (`get`, `names`, `@register`).

Each module listed in `BUILTIN_NAMES` defines the zoo model of that name, one class decorated
with `@register`; adding a model is one class plus one line there. The registry holds one
instance of each (zoo models are stateless descriptions); `get` returns it. The modules load
on the first lookup, and the package itself imports no torch (`ChainModel` and the other base
classes load on first use), so `heterps run` can refuse an unknown name by `BUILTIN_NAMES`
before torch is imported (a test checks the list against the registry).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from heterps_core.registry import Registry, UnknownName

if TYPE_CHECKING:
    from heterps_core.zoo.base import ChainLayer, ChainModel, ModelConfig, ZooModel

__all__ = ["BUILTIN_NAMES", "ChainLayer", "ChainModel", "ModelConfig", "UnknownModelError",
           "ZooModel", "get", "names", "register"]

_BASE_CLASSES = ("ChainLayer", "ChainModel", "ModelConfig", "ZooModel")

# Model name == the module that defines it (torch-free: read before any model is loaded).
BUILTIN_NAMES = (
    "ctr_dnn",
    "wide_deep",
    "deepfm",
    "dlrm",
    "two_tower",
    "two_emb",
    "skipgram_nce",
)


class UnknownModelError(UnknownName):
    """A model name that no zoo entry has."""


def __getattr__(name: str) -> Any:
    if name not in _BASE_CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("heterps_core.zoo.base"), name)
    globals()[name] = value
    return value


def _load_builtins() -> None:
    for module in BUILTIN_NAMES:
        importlib.import_module(f"heterps_core.zoo.{module}")


MODELS: Registry[ZooModel] = Registry("model", load=_load_builtins)


def register(cls: type[ZooModel]) -> type[ZooModel]:
    """Class decorator: makes a zoo model available under `cls.name`."""
    try:
        MODELS.add(cls.name, cls())
    except ValueError:
        if type(MODELS.get(cls.name)) is not cls:  # the same class again is no clash
            raise
    return cls


def names() -> list[str]:
    return MODELS.names()


def get(name: str) -> ZooModel:
    """The zoo model called `name`."""
    try:
        return MODELS.get(name)
    except UnknownName as exc:
        raise UnknownModelError(exc.noun, exc.name, exc.known) from None
