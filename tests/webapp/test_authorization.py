"""Generated authorization test: every route the URL resolver knows, every persona, every
method it answers, the expected status. A route without an entry in EXPECT fails
`test_every_route_has_an_expectation`, so a new page or endpoint is covered the day it lands.

Levels: `public` (anyone), `login` (any signed-in user), `view` / `edit` / `manage` (that
action on the row the URL names, or on the project a body names). Anonymous callers get
302 to the login page on pages and 401 from the API; outsiders 404; a role too low 403.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from webapp.projects.models import Project
from webapp.projects.services import create_project

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
TINY = json.loads((REPO / "webapp/catalogue/demo/tiny-ctr.json").read_text())
PERSONAS = ("owner", "member", "viewer", "outsider", "anonymous")
ROLE_LEVELS = {"owner": {"view", "edit", "manage"}, "member": {"view", "edit"},
               "viewer": {"view"}}

# name -> (world kind the URL's argument names, {method: level}). The world kinds are the
# keys of the `world` fixture's ids (tests/webapp/conftest.py).
EXPECT: dict[str, tuple[str | None, dict[str, str]]] = {
    # pages
    "dashboard:home": (None, {"GET": "login"}),
    "projects:create": (None, {"GET": "login", "POST": "login"}),
    "projects:detail": ("project", {"GET": "view"}),
    "projects:team": ("project", {"GET": "view"}),
    "projects:invite": ("project", {"POST": "manage"}),
    "projects:set-role": ("membership", {"POST": "manage"}),
    "projects:remove-member": ("membership", {"POST": "manage"}),
    "projects:revoke-invitation": ("invitation", {"POST": "manage"}),
    "projects:accept": (None, {"GET": "login", "POST": "login"}),
    "accounts:signup": (None, {"GET": "public"}),
    "background:detail": ("work", {"GET": "view"}),
    "background:cancel": ("work", {"POST": "edit"}),
    "background:start-evaluate": ("project", {"POST": "edit"}),
    "jobs:list": (None, {"GET": "login"}),
    "jobs:detail": ("job", {"GET": "view"}),
    "jobs:cancel": ("job", {"POST": "edit"}),
    "jobs:restart": ("job", {"POST": "edit"}),
    "budgets:job": ("job", {"POST": "edit"}),
    "budgets:project": ("project", {"POST": "manage"}),
    "jobs:replan": ("job", {"POST": "edit"}),
    "jobs:log": ("job", {"GET": "view"}),
    "jobs:metrics-csv": ("job", {"GET": "view"}),
    "jobs:compare": (None, {"GET": "login"}),
    "jobs:approve": ("result", {"GET": "edit", "POST": "edit"}),
    "costs:report": (None, {"GET": "login"}),
    "costs:export": (None, {"GET": "login"}),
    "modelzoo:index": (None, {"GET": "login"}),
    "modelzoo:list": ("project", {"GET": "view"}),
    "modelzoo:edit": ("model", {"GET": "edit", "POST": "edit"}),
    "modelzoo:delete": ("model", {"POST": "edit"}),
    "modelzoo:add": ("project", {"POST": "edit"}),
    "modelzoo:import": ("project", {"POST": "edit"}),
    "modelzoo:detail": ("model", {"GET": "view"}),
    "modelzoo:add-factory": ("project", {"POST": "edit"}),
    "profiling:start": ("model", {"POST": "edit"}),
    "profiling:detail": ("profile", {"GET": "view"}),
    "planning:index": (None, {"GET": "login"}),
    "planning:project": ("project", {"GET": "view"}),
    "planning:create": ("project", {"POST": "edit"}),
    "planning:create-cluster": ("project", {"POST": "edit"}),
    "planning:edit-cluster": ("cluster", {"GET": "edit", "POST": "edit"}),
    "planning:delete-cluster": ("cluster", {"POST": "edit"}),
    "planning:detail": ("request", {"GET": "view"}),
    "planning:result": ("result", {"GET": "view", "POST": "view"}),
    "rltraining:start": ("request", {"POST": "edit"}),
    "rltraining:detail": ("rl", {"GET": "view"}),
    "rltraining:approve": ("rl", {"POST": "edit"}),
    "catalogue:create": ("project", {"GET": "edit", "POST": "edit"}),
    "catalogue:edit": ("resource", {"GET": "edit", "POST": "edit"}),
    "catalogue:delete": ("resource", {"POST": "edit"}),
    "accounts:tokens": (None, {"GET": "login", "POST": "login"}),
    "accounts:revoke-token": ("token", {"POST": "login"}),
    "accounts:rotate-token": ("token", {"POST": "login"}),
    "accounts:password": (None, {"GET": "login", "POST": "login"}),
    "healthz": (None, {"GET": "public"}),
    "login": (None, {"GET": "public"}),
    "logout": (None, {"POST": "public"}),
    # API
    "api-root": (None, {"GET": "login"}),
    "project-list": (None, {"GET": "login", "POST": "login"}),
    "project-detail": ("project", {"GET": "view"}),
    "project-budget": ("project", {"POST": "manage"}),
    "membership-list": (None, {"GET": "login"}),
    "membership-detail": ("membership", {"GET": "view", "PATCH": "manage", "DELETE": "manage"}),
    "invitation-list": (None, {"GET": "login", "POST": "manage"}),
    "invitation-detail": ("invitation", {"GET": "manage", "DELETE": "manage"}),
    "invitation-accept": (None, {"POST": "login"}),
    "work-list": (None, {"GET": "login", "POST": "edit"}),
    "work-detail": ("work", {"GET": "view"}),
    "work-cancel": ("work", {"POST": "edit"}),
    "resource-type-list": (None, {"GET": "login", "POST": "edit"}),
    "resource-type-detail": ("resource", {"GET": "view", "PUT": "edit", "PATCH": "edit",
                                          "DELETE": "edit"}),
    "resource-type-catalogue": (None, {"GET": "login"}),
    "model-list": (None, {"GET": "login", "POST": "edit"}),
    "model-detail": ("model", {"GET": "view"}),
    "profile-run-list": (None, {"GET": "login", "POST": "edit"}),
    "profile-run-detail": ("profile", {"GET": "view"}),
    "cluster-list": (None, {"GET": "login", "POST": "edit"}),
    "cluster-detail": ("cluster", {"GET": "view", "PATCH": "edit", "DELETE": "edit"}),
    "planning-request-list": (None, {"GET": "login", "POST": "edit"}),
    "planning-request-detail": ("request", {"GET": "view"}),
    "plan-result-list": (None, {"GET": "login"}),
    "plan-result-detail": ("result", {"GET": "view"}),
    "plan-result-what-if": ("result", {"POST": "view"}),
    "rl-training-run-list": (None, {"GET": "login", "POST": "edit"}),
    "rl-training-run-detail": ("rl", {"GET": "view"}),
    "job-list": (None, {"GET": "login", "POST": "edit"}),
    "job-detail": ("job", {"GET": "view"}),
    "job-cancel": ("job", {"POST": "edit"}),
    "job-restart": ("job", {"POST": "edit"}),
    "job-budget": ("job", {"POST": "edit"}),
    "job-recovery": ("job", {"POST": "edit"}),
    "job-replan": ("job", {"GET": "view", "POST": "edit"}),
    "job-metrics": ("job", {"GET": "view"}),
    "api-costs": (None, {"GET": "login"}),
    "api-sign-in": (None, {"POST": "public"}),
    "api-token-list": (None, {"GET": "login", "POST": "login"}),
    "api-token-detail": ("token", {"GET": "login", "DELETE": "login"}),
    "api-token-rotate": ("token", {"POST": "login"}),
    "schema": (None, {"GET": "login"}),
    "api-docs": (None, {"GET": "login"}),
}

Ids = dict[str, int]
# Valid request bodies naming the personas' project (Alpha) and its rows.
BODIES: dict[tuple[str, str], Callable[[Ids], dict[str, Any]]] = {
    ("project-list", "POST"): lambda ids: {"name": "New"},
    ("work-list", "POST"): lambda ids: {"project": ids["project"], "kind": "evaluate",
                                        "params": {"instance": TINY}},
    ("model-list", "POST"): lambda ids: {"project": ids["project"], "name": "imported",
                                         "layers": TINY["layers"]},
    ("resource-type-list", "POST"): lambda ids: {"project": ids["project"], "name": "tpu",
                                                 "kind": "gpu", "price_per_hour": 1.0,
                                                 "count": 2, "memory_gb": 16.0,
                                                 "network_gbps": 10.0},
    ("resource-type-detail", "PUT"): lambda ids: {"price_per_hour": 2.0},
    ("resource-type-detail", "PATCH"): lambda ids: {"count": 3},
    ("profile-run-list", "POST"): lambda ids: {"model": ids["model"]},
    ("cluster-detail", "PATCH"): lambda ids: {"description": "edited"},
    ("cluster-list", "POST"): lambda ids: {"project": ids["project"], "name": "c2",
                                           "resource_types": [ids["resource"]]},
    ("planning-request-list", "POST"): lambda ids: {"model": ids["model"],
                                                    "cluster": ids["cluster"],
                                                    "throughput_target": 10.0},
    ("rl-training-run-list", "POST"): lambda ids: {"request": ids["request"]},
    ("job-list", "POST"): lambda ids: {"plan_result": ids["result"], "steps": 4},
    ("job-budget", "POST"): lambda ids: {"budget": 5.0},
    ("project-budget", "POST"): lambda ids: {"budget": 50.0},
    ("budgets:job", "POST"): lambda ids: {"budget": "5"},
    ("budgets:project", "POST"): lambda ids: {"budget": "50"},
    ("job-recovery", "POST"): lambda ids: {"max_restarts": 2},
    ("plan-result-what-if", "POST"): lambda ids: {"resource": "cpu", "count": 2},
    ("api-sign-in", "POST"): lambda ids: {"username": "nobody", "password": "wrong"},
    ("api-token-list", "POST"): lambda ids: {"name": "laptop"},
    ("projects:create", "POST"): lambda ids: {"name": "New"},
    ("projects:invite", "POST"): lambda ids: {"who": "someone@example.com", "role": "member"},
    ("projects:set-role", "POST"): lambda ids: {"role": "viewer"},
    ("membership-detail", "PATCH"): lambda ids: {"role": "viewer"},
    ("invitation-list", "POST"): lambda ids: {"project": ids["project"],
                                              "who": "someone@example.com"},
    ("accounts:tokens", "POST"): lambda ids: {"name": "laptop"},
}
DENIED = {401, 403, 404, 405}


def _cases() -> list[tuple[str, str, str]]:
    return [(name, method, persona) for name, (_, methods) in sorted(EXPECT.items())
            for method in methods for persona in PERSONAS]


def test_every_route_has_an_expectation(routes: list[Any]) -> None:
    missing = [f"{r.name} ({r.pattern})" for r in routes if r.name not in EXPECT]
    assert missing == [], "add these routes to EXPECT in tests/webapp/test_authorization.py"


def test_every_api_method_has_an_expectation(routes: list[Any]) -> None:
    missing = [f"{r.name} {m}" for r in routes if r.api and r.name in EXPECT
               for m in r.methods if m not in EXPECT[r.name][1]]
    assert missing == []


@pytest.fixture
def tokens(personas: Any) -> Ids:
    """Each persona's own API token (the token routes are about one's own tokens)."""
    try:
        from webapp.accounts.services import create_token
    except ImportError:
        return {}
    return {who: create_token(getattr(personas, who), "t")[0].pk
            for who in ("owner", "member", "viewer", "outsider")}


def _url(name: str, kind: str | None, ids: Ids, route: Any) -> str:
    if kind is None:
        return reverse(name)
    return reverse(name, kwargs={arg: ids[kind] for arg in route.kwargs})


def _call(client: Any, method: str, url: str, body: dict[str, Any] | None, api: bool) -> Any:
    if api:
        return client.generic(method, url, json.dumps(body or {}),
                              content_type="application/json")
    if method == "GET":
        return client.get(url)
    return client.generic(method, url, _form(body or {}),
                          content_type="application/x-www-form-urlencoded")


def _form(body: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return urlencode(body)


@pytest.mark.parametrize(("name", "method", "persona"), _cases())
def test_status_by_persona(
    name: str, method: str, persona: str, routes: list[Any], world: Any, tokens: Ids,
    personas: Any, client: Any,
) -> None:
    route = next((r for r in routes if r.name == name), None)
    if route is None:
        pytest.skip(f"{name} is not routed (yet)")
    kind, methods = EXPECT[name]
    level = methods[method]
    ids = dict(world.ids)
    if persona != "anonymous":
        client.force_login(getattr(personas, persona))
        if persona in tokens:
            ids["token"] = tokens[persona]
    ids.setdefault("token", max(tokens.values(), default=1))
    body = BODIES.get((name, method), lambda ids: {})(ids)
    response = _call(client, method, _url(name, kind, ids, route), body, route.api)
    status = response.status_code
    where = f"{method} {route.pattern} as {persona}: {status} {response.content[:300]!r}"
    assert status < 500, where
    if level == "public":
        assert status not in DENIED, where
    elif persona == "anonymous":
        if route.api:
            assert status == 401, where
        else:
            assert status == 302 and "login" in response["Location"], where
    elif level == "login":
        assert status not in DENIED, where
    elif persona == "outsider":
        assert status == 404, where
    elif level in ROLE_LEVELS[persona]:
        assert status not in DENIED, where
    else:
        assert status == 403, where


@pytest.mark.parametrize("persona", ["member", "viewer", "outsider"])
def test_unrouted_methods_are_refused(routes: list[Any], world: Any, personas: Any,
                                      client: Any, persona: str) -> None:
    client.force_login(getattr(personas, persona))
    for route in routes:
        if not route.api or route.name not in EXPECT:
            continue
        kind, methods = EXPECT[route.name]
        if "DELETE" in methods or kind == "token":
            continue
        url = _url(route.name, kind, world.ids, route)
        status = client.delete(url).status_code
        # Outsiders may learn nothing: 404 where the row is not theirs, else 405.
        assert status in (404, 405) if kind else status == 405, f"DELETE {url}: {status}"


# Cross-project references: a viewer or outsider names their OWN project (which they may
# edit) in the body, and Alpha's rows everywhere else. Nothing may be created.
CROSS = ["profile-run-list", "cluster-list", "planning-request-list", "rl-training-run-list",
         "job-list"]


def _cross_cases() -> list[tuple[str, str]]:
    return [(name, method) for (name, method) in BODIES if name in CROSS]


@pytest.mark.parametrize("persona", ["viewer", "outsider"])
@pytest.mark.parametrize(("name", "method"), _cross_cases())
def test_bodies_naming_another_projects_rows_are_refused(
    name: str, method: str, persona: str, routes: list[Any], world: Any, personas: Any,
    client: Any,
) -> None:
    user = getattr(personas, persona)
    own = create_project(user, "Mine")
    client.force_login(user)
    body = BODIES[(name, method)](world.ids)
    if "project" in body:
        body["project"] = own.pk
    route = next(r for r in routes if r.name == name)
    before = _rows()
    response = _call(client, method, _url(name, None, world.ids, route), body, route.api)
    assert response.status_code in (400, 403, 404), response.content
    assert _rows() == before


@pytest.mark.parametrize("persona", ["viewer", "outsider"])
def test_work_params_of_every_kind_naming_another_projects_rows_are_refused(
    persona: str, world: Any, personas: Any, client: Any,
) -> None:
    from webapp.background import kinds

    user = getattr(personas, persona)
    own = create_project(user, "Mine")
    client.force_login(user)
    by_model = {"Job": "job", "PlanningRequest": "request", "ProfileRun": "profile",
                "RLTrainingRun": "rl", "RegisteredModel": "model", "Cluster": "cluster",
                "ResourceType": "resource", "PlanResult": "result", "Work": "work"}
    checked = 0
    for name in kinds.names():
        for field, model in kinds.get(name).references.items():
            params = {field: world.ids[by_model[model.__name__]], "run": 2}
            answer = client.post("/api/work/", {"project": own.pk, "kind": name,
                                                "params": params},
                                 content_type="application/json")
            missing = client.post("/api/work/", {"project": own.pk, "kind": name,
                                                 "params": params | {field: 10**9}},
                                  content_type="application/json")
            assert answer.status_code == 400, (name, answer.content)
            assert answer.json() == missing.json()
            checked += 1
    assert checked >= 4


def _rows() -> dict[str, int]:
    from django.apps import apps

    labels = ("background.Work", "jobs.Job", "planning.Cluster", "planning.PlanningRequest",
              "profiling.ProfileRun", "rltraining.RLTrainingRun", "modelzoo.RegisteredModel")
    counts = {label: apps.get_model(*label.split(".")).objects.count() for label in labels}
    counts["projects"] = Project.objects.count()
    return counts
