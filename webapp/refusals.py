"""A request that is well formed but refused by the present state of things.

A model with no profile yet, an account that does not exist, an invitation already used: the
same request may succeed later, so it is no input error. Services raise `StateRefusal` like
Django's ValidationError ({field: problem}); a form shows it on its field like any other
error, and the API answers it with **409 Conflict** and the same field-named body
(`webapp/api_errors.py`), which the schema documents for every write (`webapp/api_schema.py`).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError


class StateRefusal(ValidationError):
    """ValidationError({field: problem}) that the present state, not the input, causes."""
