"""Bad-input battery: wrong types, NaN and infinity, negative, zero, huge and long values and
unknown fields thrown at every field of every API body (fields read from /api/schema/) and
every form, and bad query parameters at every GET route the resolver knows. Nothing may
answer 5xx, and a refused value gets a message that names its field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django import forms
from django.db import transaction
from django.urls import reverse

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
TINY = json.loads((REPO / "webapp/catalogue/demo/tiny-ctr.json").read_text())
HUGE = 10**30
LONG = "x" * 100_000

# Values that no field of ours may accept: a 2xx answer to one of them is a defect.
ALWAYS_BAD: dict[str, list[Any]] = {
    "integer": ["abc", 1.5, HUGE, [], {"a": 1}],
    "number": ["abc", "NaN", "Infinity", "-Infinity", 1e308, HUGE, []],
    "string": [LONG, ["a"], {"a": 1}],
    "array": ["abc", [HUGE], ["abc"], [None]],
    "object": ["abc", [1]],
    "boolean": ["maybe", [1]],
}
# Values that may be fine for some fields (0 batches are not, 0 seeds are): no 5xx, and a
# refusal names the field.
MAYBE: list[Any] = [0, -1, "", None]

Ids = dict[str, int]
# One valid body per API write, naming the world's rows (tests/webapp/conftest.py).
BODIES: dict[tuple[str, str], Callable[[Ids], dict[str, Any]]] = {
    ("project-list", "post"): lambda ids: {"name": "New", "description": ""},
    ("work-list", "post"): lambda ids: {"project": ids["project"], "kind": "evaluate",
                                        "params": {"instance": TINY}},
    ("model-list", "post"): lambda ids: {"project": ids["project"], "name": "imported",
                                         "layers": {"batch_size": TINY["batch_size"],
                                                    "layers": TINY["layers"]}},
    ("resource-type-list", "post"): lambda ids: {"project": ids["project"], "name": "tpu",
                                                 "kind": "gpu", "price_per_hour": 1.0,
                                                 "count": 2, "memory_gb": 16.0,
                                                 "network_gbps": 10.0},
    ("resource-type-detail", "put"): lambda ids: {"price_per_hour": 2.0},
    ("resource-type-detail", "patch"): lambda ids: {"count": 3},
    ("cluster-detail", "patch"): lambda ids: {"name": "renamed", "description": "d"},
    ("profile-run-list", "post"): lambda ids: {"model": ids["model"], "batch_size": 64,
                                               "repeats": 1},
    ("cluster-list", "post"): lambda ids: {"project": ids["project"], "name": "c2",
                                           "resource_types": [ids["resource"]]},
    ("planning-request-list", "post"): lambda ids: {"model": ids["profiled"],
                                                    "cluster": ids["profiled_cluster"],
                                                    "throughput_target": 10.0},
    ("rl-training-run-list", "post"): lambda ids: {"request": ids["request"]},
    ("job-list", "post"): lambda ids: {"plan_result": ids["result"], "steps": 4},
    ("job-budget", "post"): lambda ids: {"budget": 5.0},
    ("project-budget", "post"): lambda ids: {"budget": 50.0},
    ("job-recovery", "post"): lambda ids: {"max_restarts": 2},
    ("plan-result-what-if", "post"): lambda ids: {"resource": "cpu", "count": 2},
    ("api-sign-in", "post"): lambda ids: {"username": "owner", "password": "not-it"},
    ("api-token-list", "post"): lambda ids: {"name": "laptop", "days": 30},
    ("membership-detail", "patch"): lambda ids: {"role": "viewer"},
    ("invitation-list", "post"): lambda ids: {"project": ids["project"],
                                              "who": "someone@example.com", "role": "member"},
    ("invitation-accept", "post"): lambda ids: {"token": "not-a-token"},
}
# URL argument of each detail route with a body.
DETAIL_KIND = {"resource-type-detail": "resource", "plan-result-what-if": "result",
               "cluster-detail": "cluster", "membership-detail": "membership",
               "job-recovery": "job", "job-budget": "job", "project-budget": "project"}


def _schema(client: Any) -> dict[str, Any]:
    return client.get("/api/schema/?format=json").json()


def _request_fields(schema: dict[str, Any], path: str, method: str) -> dict[str, str]:
    """field -> JSON type of the operation's JSON request body."""
    op = schema["paths"].get(path, {}).get(method)
    if not op or "requestBody" not in op:
        return {}
    body = op["requestBody"]["content"].get("application/json", {}).get("schema", {})
    body = body.get("allOf", [body])[0]  # {"allOf": [$ref, {"anyOf": required sets}]}
    if "$ref" in body:
        body = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    fields = {}
    for name, prop in body.get("properties", {}).items():
        if prop.get("readOnly"):
            continue
        prop = (prop.get("anyOf") or prop.get("oneOf") or [prop])[0]  # text that takes ""
        fields[name] = prop.get("type", "string" if "enum" in prop or "$ref" in prop
                                else "object")
    return fields


def _path_of(route: Any) -> str:
    # "api/^jobs/(?P<pk>[^/.]+)/cancel/$" -> "/api/jobs/{id}/cancel/"
    return _url_of(route, "{id}")


def _url_of(route: Any, pk: str) -> str:
    return "/" + route.pattern.replace("(?P<pk>[^/.]+)", pk).replace("^", "").replace("$", "")


def _named(field: str, response: Any) -> bool:
    return field in response.content.decode(errors="replace")


def _send(client: Any, method: str, url: str, body: dict[str, Any]) -> Any:
    # Each attempt in a savepoint rolled back: one accepted value must not turn the next
    # attempt's base body into a duplicate.
    with transaction.atomic():
        response = client.generic(method.upper(), url, json.dumps(body),
                                  content_type="application/json")
        transaction.set_rollback(True)
    return response


def test_every_api_write_has_a_battery(routes: list[Any], login: Any, personas: Any) -> None:
    schema = _schema(login(personas.member))
    missing = []
    for route in routes:
        if not route.api:
            continue
        for method in route.methods:
            m = method.lower()
            if _request_fields(schema, _path_of(route), m) and (route.name, m) not in BODIES:
                missing.append(f"{method} {route.pattern}")
    assert missing == [], "add a valid body to BODIES in tests/webapp/test_bad_input.py"


@pytest.mark.parametrize(("name", "method"), sorted(BODIES))
def test_api_bodies_survive_the_battery(
    name: str, method: str, routes: list[Any], world: Any, personas: Any, client: Any,
    profiled: Any, cluster: Any,
) -> None:
    route = next((r for r in routes if r.name == name), None)
    if route is None:
        pytest.skip(f"{name} is not routed (yet)")
    client.force_login(personas.owner)
    ids = world.ids | {"profiled": profiled.model_id, "profiled_cluster": cluster.pk}
    kind = DETAIL_KIND.get(name)
    url = reverse(name, kwargs={"pk": ids[kind]}) if kind else reverse(name)
    fields = _request_fields(_schema(client), _path_of(route), method)
    assert fields, f"the schema describes no body for {method} {url}"
    base = BODIES[(name, method)](ids)
    problems = []
    unknown = _send(client, method, url, base | {"no_such_field": LONG})
    if unknown.status_code >= 500:
        problems.append(f"unknown field: {unknown.status_code}")
    for field, kind_of in fields.items():
        for value in ALWAYS_BAD.get(kind_of, []) + MAYBE:
            response = _send(client, method, url, base | {field: value})
            status = response.status_code
            shown = repr(value)[:40]
            if status >= 500:
                problems.append(f"{field}={shown}: {status}")
            elif value in MAYBE and status < 400:
                continue
            elif value not in MAYBE and status < 400:
                problems.append(f"{field}={shown}: accepted ({status})")
            elif status == 400 and not _named(field, response):
                problems.append(f"{field}={shown}: 400 without naming it: "
                                f"{response.content[:200]!r}")
    assert problems == [], f"{method.upper()} {url}"


# Query parameters every list and page may be sent; the filters a route reads must refuse
# a bad value with a 400 that names it, the others must ignore it.
BAD_QUERY = ["abc", "1.5", "-1", "0", str(HUGE), "9999-12", "2026-13", "%00", LONG[:5000]]
QUERY_PARAMS = ["project", "model", "run", "month", "page"]
FILTERS: dict[str, set[str]] = {
    "work-list": {"project"}, "resource-type-list": {"project"}, "model-list": {"project"},
    "profile-run-list": {"model"}, "cluster-list": {"project"},
    "planning-request-list": {"project"}, "plan-result-list": {"project"},
    "rl-training-run-list": {"project"}, "job-list": {"project"}, "job-metrics": {"run"},
    "api-costs": {"project", "month"}, "costs:report": {"project", "month"},
    "costs:export": {"project", "month"}, "jobs:log": {"run"}, "jobs:metrics-csv": {"run"},
    "membership-list": {"project"}, "invitation-list": {"project"},
}
ARG_KIND = {"pk": None, "project_pk": "project", "model_pk": "model", "request_pk": "request",
            "plan_result_id": "result"}
PK_KIND = {"projects:detail": "project", "background:detail": "work", "jobs:detail": "job",
           "modelzoo:detail": "model", "profiling:detail": "profile",
           "planning:detail": "request", "planning:result": "result",
           "rltraining:detail": "rl", "job-metrics": "job", "job-detail": "job",
           "jobs:log": "job", "projects:team": "project", "membership-detail": "membership",
           "invitation-detail": "invitation", "jobs:metrics-csv": "job"}


def _get_routes() -> list[str]:
    return sorted(FILTERS)


@pytest.mark.parametrize("name", _get_routes())
def test_bad_query_parameters_are_400s_naming_them(
    name: str, routes: list[Any], world: Any, personas: Any, client: Any,
) -> None:
    route = next((r for r in routes if r.name == name), None)
    if route is None:
        pytest.skip(f"{name} is not routed (yet)")
    client.force_login(personas.member)
    kwargs = {arg: world.ids[ARG_KIND[arg] or PK_KIND[name]] for arg in route.kwargs}
    url = reverse(name, kwargs=kwargs)
    problems = []
    for param in QUERY_PARAMS:
        for value in BAD_QUERY:
            response = client.get(url, {param: value})
            status = response.status_code
            if status >= 500:
                problems.append(f"?{param}={value[:20]}: {status}")
            elif (param in FILTERS[name] and not _fine(param, value)
                  and (status != 400 or not _named(param, response))):
                problems.append(f"?{param}={value[:20]}: {status}, expected a 400 naming it")
    assert problems == [], url


def _fine(param: str, value: str) -> bool:
    """A value a filter may legitimately accept."""
    return param == "month" and value == ""


def test_every_get_route_survives_bad_query_parameters(
    routes: list[Any], world: Any, personas: Any, client: Any,
) -> None:
    client.force_login(personas.owner)
    problems = []
    for route in routes:
        if (route.api and "GET" not in route.methods) or route.name in ("logout",):
            continue
        try:
            kwargs = {arg: world.ids[ARG_KIND[arg] or PK_KIND[route.name]]
                      for arg in route.kwargs}
        except KeyError:
            continue  # a POST-only page or one without a world row
        url = reverse(route.name, kwargs=kwargs)
        for param in QUERY_PARAMS:
            for value in ("abc", str(HUGE), "9999-12"):
                status = client.get(url, {param: value}).status_code
                if status >= 500:
                    problems.append(f"{url}?{param}={value[:20]}: {status}")
    assert problems == []


def test_detail_routes_with_absurd_ids_are_404(routes: list[Any], personas: Any,
                                               client: Any) -> None:
    client.force_login(personas.owner)
    problems = []
    for route in routes:
        if route.kwargs != ("pk",) or not route.api or "GET" not in route.methods:
            continue
        for pk in ("abc", "1.5", str(HUGE), "-1"):
            url = _url_of(route, pk)
            status = client.get(url).status_code
            if status != 404:
                problems.append(f"{url[:60]}: {status}")
    assert problems == []


# Forms: every page that takes a POST, its form's fields, the same battery.
def _page_forms() -> dict[str, tuple[str, str]]:
    """route -> (world kind of the URL argument, dotted form class)."""
    return {
        "projects:create": ("", "webapp.projects.forms.ProjectForm"),
        "background:start-evaluate": ("project", "webapp.background.forms.EvaluateForm"),
        "modelzoo:add": ("project", "webapp.modelzoo.forms.AddZooModelForm"),
        "modelzoo:import": ("project", "webapp.modelzoo.forms.ImportModelForm"),
        "modelzoo:edit": ("model", "webapp.modelzoo.forms.EditModelForm"),
        "profiling:start": ("model", "webapp.modelzoo.forms.ProfileForm"),
        "planning:create": ("project", "webapp.planning.forms.PlanningForm"),
        "planning:create-cluster": ("project", "webapp.planning.forms.ClusterForm"),
        "planning:result": ("result", "webapp.planning.forms.WhatIfForm"),
        "rltraining:start": ("request", "webapp.planning.forms.RLTrainingForm"),
        "jobs:approve": ("result", "webapp.jobs.forms.ApproveForm"),
        "catalogue:create": ("project", "webapp.catalogue.forms.ResourceTypeForm"),
        "accounts:tokens": ("", "webapp.accounts.forms.TokenForm"),
        "projects:invite": ("project", "webapp.projects.forms.InviteForm"),
        "projects:set-role": ("membership", "webapp.projects.forms.RoleForm"),
    }


FORM_BAD: dict[type, list[str]] = {
    forms.IntegerField: ["abc", "1.5", str(HUGE), "-1", "0"],
    forms.FloatField: ["abc", "nan", "inf", "1e308", str(HUGE), "-1", "0"],
    forms.CharField: [LONG],
    forms.ChoiceField: ["no-such-choice", LONG],
    forms.ModelChoiceField: ["abc", str(HUGE), "-1"],
}


def _battery_for(field: forms.Field) -> list[str]:
    for cls in type(field).__mro__:
        if cls in FORM_BAD:
            return FORM_BAD[cls]
    return [LONG]


def _form_errors(response: Any) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    for context in response.context or []:
        for value in context.dicts if hasattr(context, "dicts") else [context]:
            for item in value.values() if isinstance(value, dict) else []:
                if isinstance(item, forms.BaseForm) and item.is_bound:
                    errors.update(item.errors)
    return errors


@pytest.mark.parametrize("name", sorted(_page_forms()))
def test_forms_survive_the_battery(
    name: str, routes: list[Any], world: Any, personas: Any, client: Any,
) -> None:
    from django.utils.module_loading import import_string

    route = next((r for r in routes if r.name == name), None)
    kind, dotted = _page_forms()[name]
    try:
        form_class = import_string(dotted)
    except ImportError:
        pytest.skip(f"{dotted} does not exist (yet)")
    if route is None:
        pytest.skip(f"{name} is not routed (yet)")
    client.force_login(personas.owner)
    url = reverse(name, kwargs={arg: world.ids[kind] for arg in route.kwargs})
    problems = []
    before = _rows()
    for field_name, field in form_class.base_fields.items():
        for value in _battery_for(field):
            with transaction.atomic():
                response = client.post(url, {field_name: value, "steps": "4"}
                                       if field_name != "steps" else {field_name: value})
                created = _rows() != before
                transaction.set_rollback(True)
            status = response.status_code
            shown = f"{field_name}={value[:20]}"
            if status >= 500:
                problems.append(f"{shown}: {status}")
            elif created:
                problems.append(f"{shown}: accepted ({status})")
            elif status < 300 or status == 400:
                errors = _form_errors(response)
                if field_name not in errors and not _named(field_name, response):
                    problems.append(f"{shown}: refused without naming it ({status})")
    assert problems == [], url


def _rows() -> dict[str, int]:
    from django.apps import apps

    labels = ["background.Work", "jobs.Job", "planning.Cluster", "planning.PlanningRequest",
              "profiling.ProfileRun", "rltraining.RLTrainingRun", "modelzoo.RegisteredModel",
              "projects.Project", "catalogue.ResourceType", "projects.Invitation",
              "projects.Membership"]
    if apps.is_installed("webapp.accounts"):
        labels.append("accounts.ApiToken")
    return {label: apps.get_model(*label.split(".")).objects.count() for label in labels}


@pytest.mark.parametrize(("url", "body"), [
    ("/api/projects/", {"name": LONG}),
    ("/api/clusters/", {"name": LONG, "resource_types": []}),
    ("/api/models/", {"name": LONG, "zoo_name": "ctr_dnn"}),
    ("/api/tokens/", {"name": LONG}),
])
def test_a_100000_character_name_is_a_field_error(url: str, body: dict[str, Any],
                                                  personas: Any, login: Any) -> None:
    # On PostgreSQL a varchar overflow used to be a DataError and a 500.
    body = {"project": personas.project.pk, **body}
    response = login(personas.owner).post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "name" in response.json()


@pytest.mark.parametrize(("field", "value"), [
    ("throughput_target", 1e308), ("batch_size", 10**9),
])
def test_an_evaluate_target_of_1e308_is_refused_before_any_work(
    field: str, value: Any, personas: Any, login: Any
) -> None:
    from webapp.background.models import Work

    instance = TINY | {field: value}
    response = login(personas.member).post(
        "/api/work/", {"project": personas.project.pk, "kind": "evaluate",
                       "params": {"instance": instance}}, content_type="application/json")
    assert response.status_code == 400
    assert f"instance.{field}" in response.json()
    assert not Work.objects.exists()
