"""Name -> sync-mode class (a `Registry` of classes: `get` returns the class, `create` builds
one with its parameters). Adding a mode is one class and one `@register` line.

Importing this module imports its package first, which registers every built-in mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.modes.base import SyncMode
from heterps_core.registry import Registry, UnknownName

# Registration order: the order forms and tables list the modes in.
MODES: Registry[type[SyncMode]] = Registry("sync mode", ordered=True)


def register(cls: type[SyncMode]) -> type[SyncMode]:
    return MODES.register(cls)


def names() -> list[str]:
    return MODES.names()


def get(name: str) -> type[SyncMode]:
    try:
        return MODES.get(name)
    except UnknownName as exc:
        raise DataParallelError("mode", str(exc)) from None


def create(name: str, params: Mapping[str, Any] | None = None) -> SyncMode:
    return get(name)(**dict(params or {}))


def schemas() -> list[dict[str, Any]]:
    """Every mode's schema, in registration order (for the plan-approval form)."""
    return [mode.schema() for mode in MODES]
