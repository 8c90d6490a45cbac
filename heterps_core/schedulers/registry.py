"""Name -> scheduler class. Adding a scheduler is one class and one `@register` line."""

from __future__ import annotations

from heterps_core.errors import SchedulerError
from heterps_core.schedulers.base import Scheduler

_REGISTRY: dict[str, type[Scheduler]] = {}


def register(cls: type[Scheduler]) -> type[Scheduler]:
    if cls.name in _REGISTRY:
        raise ValueError(f"scheduler {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def get(name: str) -> type[Scheduler]:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise SchedulerError(f"unknown scheduler {name!r}; known: {known}") from None


def create(name: str, **kwargs: object) -> Scheduler:
    return get(name)(**kwargs)  # type: ignore[arg-type]


def _load_builtins() -> None:
    # Importing the package registers every built-in scheduler module it lists.
    import heterps_core.schedulers  # noqa: F401
