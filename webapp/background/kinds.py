"""Work kinds: what a background-work record does. One small class per kind, one registry.

Adding a kind: subclass `WorkKind`, set `name`/`label` (and `queue`: interactive or long),
implement `clean_params` (reject bad input with a `ValidationError` naming the field), state
what it takes in `params_schema` (the API's schema says it for this kind: a body it allows
is one `clean_params` takes, or one the present state refuses with a `StateRefusal`) and
`run(ctx)` (call heterps_core with `ctx.progress`, check `ctx.cancelled()` in long loops,
return JSON), decorate it with `@register`, and import its module from the app's
`AppConfig.ready()`. The Celery task `workers.tasks.run_work` runs every kind.

The registry holds one instance of each kind (kinds keep no state: a run's state is its
`WorkContext`); `get` returns it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.db.models import Model

from heterps_core.registry import Registry, UnknownName
from webapp.background.context import WorkContext
from webapp.bounds import MAX_ID

# Celery queues. Interactive work (seconds) never waits behind long work (minutes, hours):
# each queue has its own workers (embedded: its own threads), see docs/operations.md.
INTERACTIVE = "interactive"
LONG = "long"
QUEUES = (INTERACTIVE, LONG)


class WorkKind:
    name: ClassVar[str]
    label: ClassVar[str]
    queue: ClassVar[str] = LONG
    # May it start over from scratch when its worker dies mid-way (results simply replaced)?
    # Job runs may not: a lost run fails naming its step, and a person starts a new one.
    retryable: ClassVar[bool] = False
    # Params that name rows: param key -> model. `start_work` checks that each belongs to
    # the project the work is started in (a foreign id is answered like a missing one).
    references: ClassVar[dict[str, type[Model]]] = {}
    # Non-empty: only its app's service starts this kind (it owns rules the generic start
    # cannot know, e.g. a job's run number); says where a person starts it instead. The
    # generic start (`POST /api/work/`) refuses it with this text.
    started_by: ClassVar[str] = ""
    # The JSON schema of its params; `POST /api/work/`'s schema holds one per kind.
    params_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    def clean_params(self, params: Any) -> dict[str, Any]:
        """Validated, JSON-ready parameters; raise ValidationError({field: problem})."""
        raise NotImplementedError

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        """Do the work described by `ctx.params`; return the JSON result stored on the record."""
        raise NotImplementedError


KINDS: Registry[WorkKind] = Registry("kind")


def register(cls: type[WorkKind]) -> type[WorkKind]:
    KINDS.register(cls())
    return cls


def get(name: str) -> WorkKind:
    try:
        return KINDS.get(name)
    except UnknownName as exc:
        raise ValidationError({"kind": str(exc)}) from None


def names() -> list[str]:
    return KINDS.names()


def choices() -> list[tuple[str, str]]:
    return KINDS.choices(lambda kind: kind.label)


def startable_choices() -> list[tuple[str, str]]:
    """The kinds the generic start takes (not those a service owns: `started_by`)."""
    return [(name, label) for name, label in choices() if not KINDS.get(name).started_by]


def params_schemas() -> dict[str, dict[str, Any]]:
    """The params' JSON schema of each kind the generic start takes."""
    return {name: KINDS.get(name).params_schema for name, _ in startable_choices()}


def reference(description: str) -> dict[str, Any]:
    """A param naming a row of the project: a database id ."""
    return {"type": "integer", "minimum": 1, "maximum": MAX_ID, "description": description}
