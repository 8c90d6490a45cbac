"""The API's exception handler: every error a caller can fix is a 400 naming the field
(409 when the present state refuses a well-formed request: `webapp/refusals.py`).

Services raise Django's ValidationError({field: problem}) and heterps_core raises
HeterPSError / InstanceError(field, problem); DRF alone would answer those with a 500.
A value the database refuses (too long for a column, out of range) is a 400 as well: a
safety net behind the serializers' own limits.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from heterps_core.errors import HeterPSError
from webapp.refusals import StateRefusal

log = logging.getLogger(__name__)
NON_FIELD = "non_field_errors"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    return drf_exception_handler(as_api_error(exc), context)


class Conflict(exceptions.ValidationError):
    status_code = 409
    default_code = "conflict"


def as_api_error(exc: Exception) -> Exception:
    if isinstance(exc, StateRefusal) and hasattr(exc, "error_dict"):
        return Conflict(exc.message_dict)
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            return exceptions.ValidationError(exc.message_dict)
        return exceptions.ValidationError({NON_FIELD: exc.messages})
    if isinstance(exc, HeterPSError):
        field = getattr(exc, "field", "") or NON_FIELD
        problem = getattr(exc, "problem", None) or str(exc)
        return exceptions.ValidationError({field: [problem]})
    if isinstance(exc, DataError | OverflowError):
        log.warning("the database refused a value: %s", exc)
        return exceptions.ValidationError(
            {NON_FIELD: ["a value is too long or out of range for the database"]})
    return exc
