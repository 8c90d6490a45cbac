"""A request that is well formed but refused by the present state of things.

A model with no profile yet, an account that does not exist, an invitation already used: the
same request may succeed later, so it is no input error. Services raise `StateRefusal` like
Django's ValidationError ({field: problem}); a form shows it on its field like any other
error, and the API answers it with **409 Conflict** and the same field-named body
(`webapp/api_errors.py`), which the schema documents for every write (`webapp/api_schema.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError


class StateRefusal(ValidationError):
    """ValidationError({field: problem}) that the present state, not the input, causes."""


@contextmanager
def by_state() -> Iterator[None]:
    """Field-named ValidationErrors raised inside become StateRefusals: checks whose outcome
    the schema cannot know from the body (the allow-listed factory's forward(), the stored
    plan's resource types), so the same body may pass once the state differs."""
    try:
        yield
    except StateRefusal:
        raise
    except ValidationError as exc:
        if not hasattr(exc, "error_dict"):
            raise
        raise StateRefusal(exc.message_dict) from exc
