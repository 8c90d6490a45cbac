"""schemathesis against /api/schema/: generated requests for every operation (bounded
examples each, both valid and invalid data), sent in-process through the WSGI app as a
signed-in project owner. No answer may be a 5xx, and every answer whose status the schema
documents must match its schema and content type.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
EXAMPLES = 6  # per operation: ~40 operations stay well under a minute on two cores
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


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


def test_the_api_keeps_to_its_schema(api_auth: dict[str, str]) -> None:
    from webapp.wsgi import application

    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application,
                                            headers=api_auth)
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
    except Exception as exc:
        name = f"{operation.method.upper()} {operation.path}"
        return f"{name}: {type(exc).__name__}: {str(exc)[:600]}"
    return None
