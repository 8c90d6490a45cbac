"""Issue 25 item 7: a precision other than fp32 is for GPU types, and the schema of
`POST /api/resource-types/` says so (a clause on kind, or on the template when kind is left
out). Every combination of kind, template and precision: the schema takes the body exactly
when the server does, and the server's refusal is a 400 naming `precision`."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

pytestmark = pytest.mark.django_db
FIGURES = {"price_per_hour": 1.0, "count": 2, "memory_gb": 16, "network_gbps": 10}


def _validator(client: Any) -> jsonschema.Draft4Validator:
    doc = client.get("/api/schema/?format=json").json()
    body = doc["paths"]["/api/resource-types/"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    return jsonschema.Draft4Validator({**schema, "components": doc["components"]})


def test_precision_per_kind_is_in_the_schema_and_kept_by_the_server(
    personas: Any, login: Any
) -> None:
    client = login(personas.member)
    validator = _validator(client)
    combos = itertools.product([None, "cpu", "gpu"], [None, "cpu-c6i.8xlarge", "gpu-a100"],
                               [None, "", "fp32", "tf32", "amp", "bf16"])
    for n, (kind, template, precision) in enumerate(combos):
        body: dict[str, Any] = {"project": personas.project.pk, "name": f"t{n}"}
        if template is None:
            body |= FIGURES | {"kind": kind or "cpu"}
        else:
            body["template"] = template
            if kind is not None:
                body["kind"] = kind
        if precision is not None:
            body["precision"] = precision
        stated = validator.is_valid(body)
        answer = client.post("/api/resource-types/", body, content_type="application/json")
        assert (answer.status_code == 201) == stated, (body, answer.content)
        if not stated:
            assert answer.status_code == 400 and "GPU types" in answer.json()["precision"][0]


def test_a_patch_states_the_same_fields_as_a_put(personas: Any, login: Any) -> None:
    # The PATCH once offered the answer's serializer: no name pattern, no kind choices.
    client = login(personas.member)
    doc = client.get("/api/schema/?format=json").json()
    path = doc["paths"]["/api/resource-types/{id}/"]
    ref = path["patch"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert "pattern" in fields["name"] and "template" in fields
    made = client.post("/api/resource-types/", {"project": personas.project.pk,
                                                "template": "gpu-a100", "name": "a100"},
                       content_type="application/json").json()
    bad = client.patch(f"/api/resource-types/{made['id']}/", {"name": "-x", "kind": "tpu"},
                       content_type="application/json")
    assert bad.status_code == 400 and set(bad.json()) == {"name", "kind"}
