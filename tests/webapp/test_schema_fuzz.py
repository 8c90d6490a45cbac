"""schemathesis against /api/schema/: generated requests for every operation (bounded
examples each, both valid and invalid data), sent in-process through the WSGI app as a
signed-in project owner. No answer may be a 5xx, and every answer whose status the schema
documents must match its schema and content type.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
import schemathesis.specs.openapi.checks  # registers the OpenAPI checks in REGISTERED
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import CHECKS as REGISTERED

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
# Per operation: ~40 operations stay well under a minute on two cores at 6. A deeper run
# by hand: HETERPS_FUZZ_EXAMPLES=20, and HETERPS_FUZZ_SEED=N for another sequence than the
# derandomized one (CI runs the default).
EXAMPLES = int(os.environ.get("HETERPS_FUZZ_EXAMPLES", 6))
SEED = os.environ.get("HETERPS_FUZZ_SEED")
CHECKS = list(REGISTERED.get_all())
# Every check on every operation. Rules between a body's fields are in the schema (a kind's
# params, a runner's options, a zoo entry's sizes), and refusals by the present state (a
# model with no profile yet, a binding of a type the plan does not have) are 409s, which
# positive_data_acceptance takes. Left out of that check alone are the bodies breaking a
# rule JSON Schema cannot say (uniqueness by a key, references inside one value, a product
# of numbers): the server refuses those with a 400 naming the field.
def _evaluate(body: Any) -> bool:
    # An instance's layers name its resources in compute_s, names are unique, an assignment
    # is as long as the layers.
    return isinstance(body, dict) and body.get("kind") == "evaluate"


def _unstatable_model(body: Any) -> bool:
    # Layer names unique; at most MAX_EXAMPLE_ELEMENTS per example tensor (dims multiplied).
    from webapp.modelzoo import schemas

    if not isinstance(body, dict):
        return False
    layers = body.get("layers")
    layers = layers.get("layers") if isinstance(layers, dict) else layers
    names = [layer.get("name") for layer in layers if isinstance(layer, dict)] \
        if isinstance(layers, list) else []
    example = body.get("example_input")
    return (len(names) != len(set(map(str, names)))
            or (isinstance(example, str)
                and schemas.example_elements(example) > schemas.MAX_EXAMPLE_ELEMENTS))


def _unstatable_job(body: Any) -> bool:
    # A data-parallel run's slowdowns: one factor per worker (a length equal to a number).
    options = body.get("options") if isinstance(body, dict) else None
    settings = options.get("dataparallel") if isinstance(options, dict) else None
    if not isinstance(settings, dict) or not isinstance(settings.get("slowdowns"), list):
        return False
    return len(settings["slowdowns"]) not in (0, settings.get("workers", 3))


def _not_an_address(body: Any) -> bool:
    # `who` with an "@" is an e-mail address, as Django's EmailValidator reads one (dot-atom
    # local part, an IDNA domain with a TLD): a grammar beyond JSON Schema's `format`.
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    who = body.get("who") if isinstance(body, dict) else None
    if not isinstance(who, str) or "@" not in who:
        return False
    try:
        validate_email(who)
    except ValidationError:
        return True
    return False


UNSTATED = {"POST /api/work/": _evaluate, "POST /api/models/": _unstatable_model,
            "POST /api/jobs/": _unstatable_job, "POST /api/invitations/": _not_an_address}


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


PASSWORD = "fuzz-owner-password"


@pytest.fixture
def sign_in(keep_connection: None, personas: Any, world: Any, settings: Any) -> dict[str, Any]:
    """schemathesis signs in itself, as the owner, through `POST /api/token/`: the schema's
    `tokenAuth` is fetched from there (`authorization` is the header's whole value), and the
    endpoint that grants credentials may refuse a wrong password with a 400."""
    settings.ALLOWED_HOSTS = ["*"]
    personas.owner.set_password(PASSWORD)
    personas.owner.save()
    return {"auth": {"dynamic": {"openapi": {"tokenAuth": {
        "path": "/api/token/",
        "payload": {"username": personas.owner.username, "password": PASSWORD,
                    "name": "fuzz"},
        "extract_selector": "/authorization"}}}}}


# A body field naming one of the caller's objects, and the world's object of that kind. A
# generated id names nothing of the caller's (a 400 naming the field, the same answer as
# another project's id: no existence oracle), so a schema-valid id is swapped for a real one
# and the fuzzer reaches the checks behind it. Ids that break the schema are left as they are.
REFERENCES = {"project": "project", "model": "model", "cluster": "cluster",
              "request": "request", "job": "job", "result": "result", "plan_result": "result",
              "profile": "profile", "work": "work", "resource_types": "resource"}


# A work's `run` names a profile run or an RL training run, by its kind.
RUN_OF_KIND = {"profile": "profile", "rl-train": "rl"}


def with_real_ids(value: Any, ids: dict[str, int]) -> Any:
    value = _work_ids(value, ids)
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


def _work_ids(body: Any, ids: dict[str, int]) -> Any:
    if not isinstance(body, dict) or not isinstance(body.get("params"), dict):
        return body
    run = RUN_OF_KIND.get(body.get("kind"))  # type: ignore[arg-type]
    if run and _an_id(body["params"].get("run")):
        return {**body, "params": {**body["params"], "run": ids[run]}}
    return body


def _an_id(value: Any) -> bool:
    return type(value) is int and 1 <= value <= 2**63 - 1


def test_the_api_keeps_to_its_schema(sign_in: dict[str, Any], personas: Any, world: Any) -> None:
    from schemathesis.config import SchemathesisConfig

    from webapp.accounts.services import create_token
    from webapp.wsgi import application

    config = SchemathesisConfig.from_dict(sign_in)
    # The schema itself is for members only: read with a token of the owner's.
    _, key = create_token(personas.owner, "schema")
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application,
                                            config=config,
                                            headers={"Authorization": f"Token {key}"})

    @schema.hook
    def map_body(context: Any, body: Any) -> Any:
        return with_real_ids(body, world.ids)

    failures = []
    operations = 0
    for result in schema.get_all_operations():
        operations += 1
        problem = _fuzz(result.ok())
        if problem:
            failures.append(problem)
    assert operations >= 30
    assert failures == [], "\n".join(failures)


def _fuzz(operation: Any) -> str | None:
    """The operation's first failure as a line, or None."""

    name = f"{operation.method.upper()} {operation.path}"
    unstated = UNSTATED.get(name, lambda body: False)
    all_but_acceptance = [c for c in CHECKS if c.__name__ != "positive_data_acceptance"]

    @given(case=operation.as_strategy())
    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None,
                         phases=[Phase.generate], derandomize=SEED is None,
                         suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        response = case.call()
        case.validate_response(
            response, checks=all_but_acceptance if unstated(case.body) else CHECKS)

    if SEED is not None:
        run = seed(int(SEED))(run)
    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis raises a FailureGroup
        return f"{name}: {type(exc).__name__}: {str(exc)[:1500]}"
    return None
