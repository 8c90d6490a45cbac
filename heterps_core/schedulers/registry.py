"""Name -> scheduler class (a `Registry` of classes: `get` returns the class, `create` builds
one). Adding a scheduler is one class and one `@register` line.

Importing this module imports its package first, which registers every built-in scheduler.
"""

from __future__ import annotations

from typing import Any

from heterps_core.errors import SchedulerError
from heterps_core.registry import Registry, UnknownName
from heterps_core.schedulers.base import Scheduler

SCHEDULERS: Registry[type[Scheduler]] = Registry("scheduler")


def register(cls: type[Scheduler]) -> type[Scheduler]:
    return SCHEDULERS.register(cls)


def names() -> list[str]:
    return SCHEDULERS.names()


def get(name: str) -> type[Scheduler]:
    try:
        return SCHEDULERS.get(name)
    except UnknownName as exc:
        raise SchedulerError(str(exc)) from None


def create(name: str, **kwargs: Any) -> Scheduler:
    return get(name)(**kwargs)
