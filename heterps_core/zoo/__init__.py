"""The model zoo: name -> `ZooModel`, one registry (`get`, `names`, `@register`).

Each module listed in `_BUILTINS` defines one zoo model class decorated with `@register`;
adding a model is one class plus one line there.
"""

from __future__ import annotations

import importlib

from heterps_core.errors import HeterPSError
from heterps_core.zoo.base import ChainLayer, ChainModel, ModelConfig, ZooModel

__all__ = ["ChainLayer", "ChainModel", "ModelConfig", "UnknownModelError", "ZooModel",
           "get", "names", "register"]

_REGISTRY: dict[str, type[ZooModel]] = {}
_BUILTINS = (
    "ctr_dnn",
    "wide_deep",
    "deepfm",
    "dlrm",
    "two_tower",
    "two_emb",
    "skipgram_nce",
)


class UnknownModelError(HeterPSError, KeyError):
    """A model name that no zoo entry has."""

    def __str__(self) -> str:
        return str(self.args[0])


def register(cls: type[ZooModel]) -> type[ZooModel]:
    """Class decorator: makes a zoo model available under `cls.name`."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"zoo model {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def get(name: str) -> ZooModel:
    """A fresh instance of the zoo model called `name`."""
    _load_builtins()
    try:
        return _REGISTRY[name]()
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownModelError(f"unknown model {name!r}; known: {known}") from None


def _load_builtins() -> None:
    for module in _BUILTINS:
        importlib.import_module(f"heterps_core.zoo.{module}")
