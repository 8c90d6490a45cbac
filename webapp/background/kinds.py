"""Work kinds: what a background-work record does. One small class per kind, one registry.

Adding a kind: subclass `WorkKind`, set `name`/`label`, implement `clean_params` (reject
bad input with a `ValidationError` naming the field) and `run` (call heterps_core, report
progress, return JSON), decorate it with `@register`, and import its module in
`webapp/background/kind_modules.py`. The Celery task `workers.tasks.run_work` runs every kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.db.models import Model

from heterps_core.progress import ProgressCallback

_KINDS: dict[str, type[WorkKind]] = {}


class WorkKind:
    name: ClassVar[str]
    label: ClassVar[str]
    # Celery queue: GPU-bound kinds go to a queue only GPU worker machines consume.
    queue: ClassVar[str] = "default"
    # Params that name rows: param key -> model. `start_work` checks that each belongs to
    # the project the work is started in (a foreign id is answered like a missing one).
    references: ClassVar[dict[str, type[Model]]] = {}

    def clean_params(self, params: Any) -> dict[str, Any]:
        """Validated, JSON-ready parameters; raise ValidationError({field: problem})."""
        raise NotImplementedError

    def run(self, params: dict[str, Any], progress: ProgressCallback) -> dict[str, Any]:
        """Do the work; return the JSON result stored on the record."""
        raise NotImplementedError


def register(cls: type[WorkKind]) -> type[WorkKind]:
    if cls.name in _KINDS:
        raise ValueError(f"work kind {cls.name!r} registered twice")
    _KINDS[cls.name] = cls
    return cls


def get(name: str) -> WorkKind:
    _load()
    try:
        return _KINDS[name]()
    except KeyError:
        known = ", ".join(sorted(_KINDS))
        raise ValidationError({"kind": f"unknown kind {name!r}; known: {known}"}) from None


def names() -> list[str]:
    _load()
    return sorted(_KINDS)


def choices() -> list[tuple[str, str]]:
    _load()
    return [(name, _KINDS[name].label) for name in sorted(_KINDS)]


def _load() -> None:
    from webapp.background import kind_modules  # noqa: F401  registers every kind
