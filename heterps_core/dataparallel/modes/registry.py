"""Name -> sync-mode class. Adding a mode is one class and one `@register` line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.modes.base import SyncMode

_REGISTRY: dict[str, type[SyncMode]] = {}


def register(cls: type[SyncMode]) -> type[SyncMode]:
    if cls.name in _REGISTRY:
        raise ValueError(f"sync mode {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    _load_builtins()
    return list(_REGISTRY)


def get(name: str) -> type[SyncMode]:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY)
        raise DataParallelError("mode", f"unknown sync mode {name!r}; known: {known}") from None


def create(name: str, params: Mapping[str, Any] | None = None) -> SyncMode:
    return get(name)(**dict(params or {}))


def schemas() -> list[dict[str, Any]]:
    """Every mode's schema, in registration order (for the plan-approval form)."""
    return [get(name).schema() for name in names()]


def _load_builtins() -> None:
    # Importing the package registers every built-in mode module it lists.
    import heterps_core.dataparallel.modes  # noqa: F401
