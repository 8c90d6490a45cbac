"""Finding the model a run trains: a zoo name, `package.module:Class`, `path/file.py:Class`, or
`package.module:factory` (a function returning an nn.Module, see zoo/imported.py).

Worker processes resolve the same reference on their own machine, so a reference must be
importable there as well.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from heterps_core.runtime.errors import RunConfigError
from heterps_core.zoo.base import ZooModel


def resolve_model(reference: str) -> ZooModel:
    """A ZooModel instance for `reference`; a clear `RunConfigError` when there is none."""
    if ":" not in reference:
        return _from_zoo(reference)
    where, _, attr = reference.rpartition(":")
    module = _load_file(where) if where.endswith(".py") else _import(where)
    cls = getattr(module, attr, None)
    if callable(cls) and not isinstance(cls, type) and not where.endswith(".py"):
        return _from_factory(reference)
    if not isinstance(cls, type) or not issubclass(cls, ZooModel):
        raise RunConfigError("model", f"{reference!r} does not name a ZooModel class or a "
                                      "factory of an nn.Module")
    return cls()


def _from_factory(reference: str) -> ZooModel:
    # A function returning an nn.Module: traced into its chain (heterps_core.zoo.imported).
    from heterps_core.zoo.imported import FactoryModel, ModelImportError

    try:
        return FactoryModel(reference)
    except ModelImportError as exc:
        raise RunConfigError("model", str(exc)) from None


def _from_zoo(name: str) -> ZooModel:
    try:
        zoo = importlib.import_module("heterps_core.zoo")
        get = zoo.get
    except (ImportError, AttributeError):
        raise RunConfigError(
            "model", f"the model zoo is not available to look up {name!r}"
        ) from None
    try:
        model = get(name)
    except Exception as exc:  # the zoo's own error already names the problem
        raise RunConfigError("model", str(exc)) from None
    if isinstance(model, type):
        model = model()
    if not isinstance(model, ZooModel):
        raise RunConfigError("model", f"zoo entry {name!r} is not a ZooModel")
    return model


def _import(module: str) -> object:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RunConfigError("model", f"cannot import {module!r} ({exc})") from None


def _load_file(path: str) -> object:
    file = Path(path)
    if not file.is_file():
        raise RunConfigError("model", f"no such model file {path!r}")
    name = f"heterps_model_{abs(hash(str(file.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise RunConfigError("model", f"cannot load {path!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
