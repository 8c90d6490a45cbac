"""Form and API fields whose ranges come from the core's table (`heterps_core.limits`), and
the tolerant parsing of query parameters: bad input is a ValidationError naming the field,
never an exception from the database driver."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from heterps_core.errors import InstanceError
from heterps_core.limits import LIMITS, Limit

MAX_TEXT = 10_000  # characters in any free-text field without a column limit of its own


MAX_ID = 2**63 - 1


def valid_id(value: Any) -> int | None:
    """`value` as a primary key if it can be one (a whole number in 1..2**63-1), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or not 1 <= value <= MAX_ID:
        return None
    return value


class FiniteFloatField(serializers.FloatField):
    """DRF's FloatField lets NaN and infinity through (and past max_value: NaN compares
    false); no input of ours means either."""

    def to_internal_value(self, data: Any) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError(f"must be a finite number, got {data!r}")
        return value


def _check(limit: Limit) -> Any:
    def validate(value: Any) -> None:
        try:
            limit.check(value, limit.name)
        except InstanceError as exc:
            raise ValidationError(exc.problem) from None

    return validate


def api_number(name: str, **kwargs: Any) -> serializers.Field:
    """A serializer field for the input `name` of `heterps_core.limits.LIMITS`."""
    limit = LIMITS[name]
    kwargs.setdefault("help_text", f"{limit.unit}, {limit.describe()}")
    if limit.integer:
        return serializers.IntegerField(min_value=int(limit.low), max_value=int(limit.high),
                                        error_messages=_range_messages(limit), **kwargs)
    return _number_field(limit)(validators=[_check(limit)], **kwargs)


def _number_field(limit: Limit) -> type[FiniteFloatField]:
    """FiniteFloatField whose OpenAPI schema states the limit's range (the validator checks
    it; a schema without it lets clients and fuzzers send values the API refuses)."""
    schema: dict[str, Any] = {"type": "number", "format": "double", "minimum": limit.low,
                              "maximum": limit.high}
    if not limit.low_inclusive:
        schema["exclusiveMinimum"] = True  # OpenAPI 3.0's form
    field = type(f"{limit.name.title().replace('_', '')}Field", (FiniteFloatField,), {})
    return extend_schema_field(schema)(field)


def _range_messages(limit: Limit) -> dict[str, str]:
    message = f"must be {limit.describe()} ({limit.unit})"
    return {"min_value": message, "max_value": message}


def api_id(**kwargs: Any) -> serializers.IntegerField:
    """A primary key in a request body: a whole number the database can hold."""
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


def form_number(name: str, **kwargs: Any) -> forms.Field:
    """A form field for the input `name` of `heterps_core.limits.LIMITS`."""
    limit = LIMITS[name]
    kwargs.setdefault("help_text", f"{limit.describe()}")
    if limit.integer:
        return forms.IntegerField(min_value=int(limit.low), max_value=int(limit.high),
                                  error_messages=_range_messages(limit), **kwargs)
    return forms.FloatField(validators=[_check(limit)], **kwargs)


def query_id(params: QueryDict, name: str) -> int | None:
    """The query parameter `name` as a primary key; None when absent or empty."""
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_ID:
        raise ValidationError({name: f"must be a whole number from 1 to {MAX_ID}, got {raw!r}"})
    return int(text)


def query_int(params: QueryDict, name: str, low: int = 1, high: int = MAX_ID) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not text.lstrip("-").isdigit() or not low <= int(text) <= high:
        raise ValidationError({name: f"must be a whole number from {low} to {high}, got {raw!r}"})
    return int(text)


def filter_by_query(
    params: QueryDict, queryset: QuerySet[Any], *names: str
) -> QuerySet[Any]:
    """`queryset` narrowed by each id parameter present (`?project=3&model=7`)."""
    for name in names:
        value = query_id(params, name)
        if value is not None:
            queryset = queryset.filter(**{f"{name}_id": value})
    return queryset



def _check_ids(values: Any, field: forms.Field) -> None:
    for value in values:
        if valid_id(value) is None:
            raise ValidationError(field.error_messages["invalid_pk_value"], code="invalid_pk_value",
                                  params={"pk": str(value)[:40]})


class IdChoiceField(forms.ModelChoiceField):
    """A ModelChoiceField whose value is checked to be an id before the database sees it."""

    default_error_messages = {"invalid_pk_value": "“%(pk)s” is not a valid value."}

    def to_python(self, value: Any) -> Any:
        if value not in self.empty_values:
            _check_ids([value], self)
        return super().to_python(value)


class IdMultipleChoiceField(forms.ModelMultipleChoiceField):
    """A ModelMultipleChoiceField whose values are checked to be ids first (10**30 makes
    SQLite raise OverflowError)."""

    def _check_values(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            _check_ids(value, self)
        return super()._check_values(value)  # type: ignore[misc]  # not in django-stubs
