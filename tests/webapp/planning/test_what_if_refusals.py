"""Issue 25 item 7 (the schema fuzz at 20 examples, seed 5): a what-if names a resource of
the stored plan's cluster, which the body cannot know (a 409 naming `resource`), and gives
a new price or count, which the schema says (a 400 naming `price_per_hour` otherwise)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from webapp.planning import services

pytestmark = pytest.mark.django_db


def _post(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, content_type="application/json")


def test_what_if_refusals_by_state_and_by_body(
    personas: Any, login: Any, profiled: Any, cluster: Any
) -> None:
    client = login(personas.viewer)
    doc = client.get("/api/schema/?format=json").json()
    body = doc["paths"]["/api/plan-results/{id}/what-if/"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    validator = jsonschema.Draft4Validator({**schema, "components": doc["components"]})
    assert not validator.is_valid({"resource": "cpu"})
    assert not validator.is_valid({"resource": "cpu", "count": None, "price_per_hour": None})
    assert validator.is_valid({"resource": "tpu", "count": 2})

    planning = services.start_planning(personas.member, profiled.model, cluster, 50_000,
                                       ["exact"])
    services.solve_request(planning.pk)
    url = f"/api/plan-results/{planning.results.get().pk}/what-if/"
    unknown = _post(client, url, {"resource": "tpu", "count": 2})
    assert unknown.status_code == 409
    assert unknown.json() == {"resource": ["no resource 'tpu' in this plan's cluster"]}
    resource = planning.results.get().plan["stages"][0]["resource"]
    neither = _post(client, url, {"resource": resource})
    assert neither.status_code == 400
    assert neither.json() == {"price_per_hour": ["give a new price or a new count"]}
