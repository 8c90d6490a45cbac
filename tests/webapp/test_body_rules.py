"""The rules between a body's fields, stated in the API's schema and kept by the server: a
work's params per kind and a job's options per runner come from their registries; what the
body alone decides is a 400 naming the field, what stored objects or this server decide
(a model name taken, a factory's forward(), the plan's resource types) a 409 naming it."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db
FACTORY = "heterps_core.zoo.examples.tabular:tabular_ctr"


def _post(client: Any, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, body, content_type="application/json")


def _request_schema(client: Any, path: str) -> dict[str, Any]:
    schema = client.get("/api/schema/?format=json").json()
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return body["schema"]


def test_the_schema_states_params_per_kind_and_options_per_runner(
    personas: Any, login: Any
) -> None:
    from webapp.background import kinds
    from webapp.jobs import runners

    client = login(personas.member)
    work = _request_schema(client, "/api/work/")["allOf"][1]["oneOf"]
    assert {w["properties"]["kind"]["enum"][0] for w in work} == set(kinds.params_schemas())
    plan = next(w for w in work if w["properties"]["kind"]["enum"] == ["plan"])
    assert plan["properties"]["params"]["required"] == ["request"]
    jobs = _request_schema(client, "/api/jobs/")["allOf"][1]["oneOf"]
    assert [j["properties"]["runner"]["enum"][0] for j in jobs] == runners.RUNNERS.names()
    pipeline = jobs[0]["properties"]["options"]["properties"]
    assert "async" in pipeline["sync_mode"]["enum"] and "pattern" in (
        pipeline["binding"]["additionalProperties"])


def test_models_the_body_breaks_are_400s_the_state_refuses_409s(
    personas: Any, login: Any
) -> None:
    client = login(personas.member)
    body = {"project": personas.project.pk, "factory": FACTORY}
    syntax = _post(client, "/api/models/", dict(body, example_input="a 64 by 13 matrix"))
    assert syntax.status_code == 400 and "example_input" in syntax.json()
    huge = _post(client, "/api/models/", dict(body, example_input="float32[99999,99999]"))
    assert huge.status_code == 400 and "at most" in huge.json()["example_input"][0]
    # Well formed, but not what this factory's forward() takes: its code decides.
    unfit = _post(client, "/api/models/", dict(body, example_input="float32[4,3]"))
    assert unfit.status_code == 409 and "example_input" in unfit.json()
    assert _post(client, "/api/models/", body).status_code == 201
    taken = _post(client, "/api/models/", body)
    assert taken.status_code == 409 and "already exists" in taken.json()["name"][0]
    assert _post(client, "/api/models/", {"project": personas.project.pk, "layers": [
        {"name": "a", "compute_s": {"cpu": 1.0}}]}).status_code == 400  # timings, no batch


def test_jobs_the_body_breaks_are_400s_the_plan_refuses_409s(
    personas: Any, login: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    body = {"plan_result": plan_result.pk, "steps": 8, "runner": "pipeline"}
    unknown_mode = _post(client, "/api/jobs/", dict(body, options={"sync_mode": "lockstep"}))
    assert unknown_mode.status_code == 400 and "options.sync_mode" in unknown_mode.json()
    bad_target = _post(client, "/api/jobs/", dict(body, options={"binding": {"x": "cuda:-1"}}))
    assert bad_target.status_code == 400 and "options.binding.x" in bad_target.json()
    # A well-formed binding of a type this plan does not have: the plan decides.
    other_type = _post(client, "/api/jobs/", dict(body, options={"binding": {"tpu-pod": "cpu"}}))
    assert other_type.status_code == 409
    assert "the plan has no resource type" in other_type.json()["options.binding.tpu-pod"][0]
    too_many = _post(client, "/api/jobs/", dict(body, runner="dataparallel", batch_size=8,
                                                 options={"dataparallel": {"workers": 65}}))
    assert too_many.status_code == 400 and "options.dataparallel.workers" in too_many.json()


def test_work_params_per_kind(personas: Any, login: Any) -> None:
    client = login(personas.member)
    body = {"project": personas.project.pk, "kind": "plan"}
    refused = _post(client, "/api/work/", dict(body, params={"request": "first"}))
    assert refused.status_code == 400 and "request" in refused.json()


def test_a_jobs_metrics_are_a_list_and_a_replan_not_offered_is_a_409(
    personas: Any, login: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    made = _post(client, "/api/jobs/", {"plan_result": plan_result.pk, "steps": 8})
    assert made.status_code == 201, made.json()
    job = made.json()["id"]
    schema = client.get("/api/schema/?format=json").json()
    answer = schema["paths"]["/api/jobs/{id}/metrics/"]["get"]["responses"]["200"]
    assert answer["content"]["application/json"]["schema"]["type"] == "array"
    assert client.get(f"/api/jobs/{job}/metrics/").json() == []  # nothing measured yet
    # Whether a re-plan is offered, the job's runs decide: nothing measured, nothing offered.
    refused = _post(client, f"/api/jobs/{job}/replan/", {})
    assert refused.status_code == 409 and refused.json()["replan"]


def test_schema_rules_are_openapi_30(personas: Any, login: Any) -> None:
    # 3.0 has no `const`: a clause saying one would be ignored by 3.0 validators (the zoo's
    # sizes per entry, a GPU kind's precisions went unstated that way).
    from webapp.api_schema import openapi30

    assert openapi30({"anyOf": [{"properties": {"const": {"const": 1}}}]}) == {
        "anyOf": [{"properties": {"const": {"enum": [1]}}}]}
    schema = login(personas.member).get("/api/schema/?format=json").content.decode()
    assert '"const"' not in schema
