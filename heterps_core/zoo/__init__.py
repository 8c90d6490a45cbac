"""The model zoo: name -> `ZooModel`, one registry (`get`, `names`, `@register`).

Each module listed in `_BUILTINS` defines one zoo model class decorated with `@register`;
adding a model is one class plus one line there. The registry holds one instance of each
(zoo models are stateless descriptions); `get` returns it. The modules load on the first
lookup, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib

from heterps_core.registry import Registry, UnknownName
from heterps_core.zoo.base import ChainLayer, ChainModel, ModelConfig, ZooModel

__all__ = ["ChainLayer", "ChainModel", "ModelConfig", "UnknownModelError", "ZooModel",
           "get", "names", "register"]

_BUILTINS = (
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


def _load_builtins() -> None:
    for module in _BUILTINS:
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
