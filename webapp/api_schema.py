"""The OpenAPI schema's error answers (every operation documents the refusals it can give)
and request bodies complete in more than one way.

Views declare their success bodies; the errors follow from how the API is built, so they
are derived here once instead of being repeated in every @extend_schema: DRF's
authentication (401), project roles (403), lookups and pages (404), the exception handler's
field-named 400s and 409s (webapp/api_errors.py, webapp/refusals.py) and throttles (429).
"""

from __future__ import annotations

from typing import Any, Literal

from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

Direction = Literal["request", "response"]

MESSAGE = {"type": "object", "properties": {"detail": {"type": "string"}},
           "required": ["detail"]}
# {"field": ["problem", ...]}; nested serializers nest the same shape.
FIELD_ERRORS = {"type": "object", "additionalProperties": {}}
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
TEXT_FIELDS = (serializers.CharField, serializers.EmailField, serializers.SlugField)
NO_NUL = "^[^\\u0000]*$"
# DRF trims a text field before it refuses a blank one: "  " is blank. Not only white space.
BLANK = {"type": "string", "maxLength": 0}
# What str.strip() removes, spelt out: a regex's \s differs between dialects (ECMA's has no
# U+001C..U+001F, which Python strips), so a client's generator would take "\x1c" for text.
SPACES = "".join(f"\\u{c:04x}" for c in range(0x10000) if chr(c).isspace())
NOT_ONLY_SPACE = f"^[^\\u0000]*[^{SPACES}\\u0000][^\\u0000]*$"


def requires(field: str, *others: str) -> dict[str, Any]:
    """A schema clause: a body giving `field` (not null) gives each of `others` (not null)."""
    given = {"required": [field], "properties": {field: {"not": {"type": "null"}}}}
    needed = {"required": list(others),
              "properties": {o: {"not": {"type": "null"}} for o in others}}
    return {"anyOf": [{"not": given}, needed]}


def openapi30(clause: Any) -> Any:
    """A clause as OpenAPI 3.0 says it: `const` is JSON Schema's, which 3.0 does not have, so
    validators and generators of 3.0 ignore it (a rule on a one-value field would then
    say nothing); a one-value `enum` means the same."""
    if isinstance(clause, list):
        return [openapi30(c) for c in clause]
    if not isinstance(clause, dict):
        return clause
    out = {k: ({name: openapi30(p) for name, p in v.items()} if k == "properties"
               and isinstance(v, dict) else openapi30(v))
           for k, v in clause.items() if k != "const"}
    if "const" in clause:
        out["enum"] = [clause["const"]]
    return out


def _answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


class ApiAutoSchema(AutoSchema):
    def _get_request_for_media_type(
        self, serializer: Any, direction: Direction = "request"
    ) -> Any:
        # A serializer whose body is complete in more than one way (a catalogue template, or
        # every field) says so in `required_any_of`; rules between its fields (a field that
        # needs another) in `schema_rules` (JSON-schema clauses, `requires()`; a classmethod
        # where a registry makes them, e.g. a schema per kind). The schema then says them too.
        # A PATCH whose view validates the body whole (`whole_in_patch`: the one thing it
        # changes is required) keeps its required fields; drf-spectacular drops them all.
        whole = self.method == "PATCH" and getattr(serializer, "whole_in_patch", False)
        if whole:
            self.method = "PUT"
        try:
            schema, required = super()._get_request_for_media_type(serializer, direction)
        finally:
            if whole:
                self.method = "PATCH"
        rules = getattr(serializer, "schema_rules", ())
        clauses = list(rules() if callable(rules) else rules)
        ways = getattr(serializer, "required_any_of", None)
        if ways and self.method != "PATCH":
            clauses.append({"anyOf": [{"required": list(w)} for w in ways]})
            required = True
        if clauses:
            schema = {"allOf": [schema, *map(openapi30, clauses)]}
        return schema, required

    def _map_serializer_field(self, field: Any, direction: Direction,
                              bypass_extensions: bool = False) -> dict[str, Any]:
        # DRF refuses a NUL character in any text field ("Null characters are not allowed").
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        # A field with a pattern of its own (a RegexValidator) keeps it.
        own_pattern = any(isinstance(v, RegexValidator) for v in field.validators)
        if (direction == "request" and type(field) in TEXT_FIELDS and not own_pattern
                and schema.get("type") == "string" and "pattern" not in schema):
            blank_is_refused = not field.allow_blank and field.trim_whitespace
            schema["pattern"] = NOT_ONLY_SPACE if blank_is_refused else NO_NUL
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        # A text field that takes "" becomes oneOf [its constraints, blank]; "" can match
        # both (a pattern that allows it), which oneOf refuses: either will do.
        super()._insert_field_validators(field, schema)
        ways = schema.get("oneOf")
        if getattr(field, "allow_blank", False) and ways and ways[-1] == BLANK:
            schema["anyOf"] = schema.pop("oneOf")

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for code, answer in self._refusals().items():
            responses.setdefault(code, answer)
        return responses

    def _refusals(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        takes_input = self.method in WRITES or bool(self._get_parameters())
        if takes_input:
            out["400"] = _answer("A field is missing or wrong (an id in the body that names "
                                 "nothing of yours included): the answer names it.",
                                 FIELD_ERRORS)
        if self.method in WRITES:
            out["409"] = _answer("Well formed, but refused by the present state of things (a "
                                 "model with no profile yet, an invitation already used): "
                                 "the answer names the field.", FIELD_ERRORS)
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            out["401"] = _answer("Not signed in: no token, or an expired or revoked one.",
                                 MESSAGE)
            out["403"] = _answer("Signed in, but this role may not do this here.", MESSAGE)
        if "{" in self.path or self._is_list_view() or takes_input:
            # A path id, a page, or an id in the body or query that names nothing of yours.
            out["404"] = _answer("No such object in a project of yours (or no such page).",
                                 MESSAGE)
        if _throttled(self.view):
            out["429"] = _answer("Too many attempts: wait the Retry-After seconds.", MESSAGE)
        return out


def _throttled(view: Any) -> bool:
    """DRF throttles, a sign-in that slows failed passwords down itself
    (`sign_in_throttled`, webapp/accounts/throttle.py), or an authentication that slows an
    address guessing keys down the same way (`throttles_failures`): each may answer 429."""
    return (bool(view.get_throttles()) or getattr(view, "sign_in_throttled", False)
            or any(getattr(a, "throttles_failures", False) for a in view.authentication_classes))
