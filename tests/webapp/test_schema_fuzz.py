"""schemathesis against /api/schema/: generated requests for every operation (bounded
examples each, both valid and invalid data), sent in-process through the WSGI app as a
signed-in project owner. No answer may be a 5xx, and every answer whose status the schema
documents must match its schema and content type.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
import schemathesis.specs.openapi.checks  # registers the OpenAPI checks in REGISTERED
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import CHECKS as REGISTERED

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
EXAMPLES = 6  # per operation: ~40 operations stay well under a minute on two cores
# Every check but positive_data_acceptance: a schema-valid body can still break a rule
# between fields (amp precision on a CPU type) or meet a state the schema cannot know (a
# model with no profile yet); both are 400s naming the field, which that check counts as
# a failure (docs/architecture.md, "Adding an API endpoint").
CHECKS = [c for c in REGISTERED.get_all() if c.__name__ != "positive_data_acceptance"]


@pytest.fixture
def keep_connection() -> Any:
    # The WSGI handler closes "old" connections when a request starts and ends, which
    # would close the test's transaction; Django's test client detaches them the same way.
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_auth(keep_connection: None, personas: Any, world: Any, settings: Any) -> dict[str, str]:
    from webapp.accounts.services import create_token

    settings.ALLOWED_HOSTS = ["*"]
    _, key = create_token(personas.owner, "fuzz")
    return {"Authorization": f"Token {key}"}


# A body field naming one of the caller's objects, and the world's object of that kind. A
# generated id names nothing of the caller's (a 400 naming the field, the same answer as
# another project's id: no existence oracle), so a schema-valid id is swapped for a real one
# and the fuzzer reaches the checks behind it. Ids that break the schema are left as they are.
REFERENCES = {"project": "project", "model": "model", "cluster": "cluster",
              "request": "request", "job": "job", "result": "result", "plan_result": "result",
              "profile": "profile", "work": "work", "resource_types": "resource"}


def with_real_ids(value: Any, ids: dict[str, int]) -> Any:
    if isinstance(value, list):
        return [with_real_ids(v, ids) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        kind = REFERENCES.get(key)
        if kind and _an_id(item):
            item = ids[kind]
        elif kind and isinstance(item, list) and item and all(map(_an_id, item)):
            item = [ids[kind]]
        out[key] = with_real_ids(item, ids)
    return out


def _an_id(value: Any) -> bool:
    return type(value) is int and 1 <= value <= 2**63 - 1


def test_the_api_keeps_to_its_schema(api_auth: dict[str, str], world: Any) -> None:
    from webapp.wsgi import application

    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application,
                                            headers=api_auth)

    @schema.hook
    def map_body(context: Any, body: Any) -> Any:
        return with_real_ids(body, world.ids)

    failures = []
    operations = 0
    for result in schema.get_all_operations():
        operations += 1
        problem = _fuzz(result.ok(), api_auth)
        if problem:
            failures.append(problem)
    assert operations >= 30
    assert failures == [], "\n".join(failures)


def _fuzz(operation: Any, auth: dict[str, str]) -> str | None:
    """The operation's first failure as a line, or None."""

    @given(case=operation.as_strategy())
    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None,
                         phases=[Phase.generate], derandomize=True,
                         suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        response = case.call(headers=auth)
        case.validate_response(response, checks=CHECKS, headers=auth)

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis raises a FailureGroup
        name = f"{operation.method.upper()} {operation.path}"
        return f"{name}: {type(exc).__name__}: {str(exc)[:600]}"
    return None
