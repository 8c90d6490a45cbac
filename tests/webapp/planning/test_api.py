"""Planning API: clusters, planning requests with their results, what-if; tokens work,
viewers read, members write, outsiders get 404 on every object."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from webapp.planning import services
from webapp.planning.models import PlanningRequest

pytestmark = pytest.mark.django_db


def _post(client: Any, url: str, data: Any) -> Any:
    return client.post(url, data, content_type="application/json")


def test_start_a_plan_over_the_api_and_read_it_back(personas: Any, login: Any, profiled: Any,
                                                    cluster: Any) -> None:
    body = {"model": profiled.model.pk, "cluster": cluster.pk, "throughput_target": 50_000,
            "schedulers": ["exact", "homogeneous"]}
    assert _post(login(personas.viewer), "/api/planning-requests/", body).status_code == 403
    assert _post(login(personas.outsider), "/api/planning-requests/", body).status_code == 404
    bad = _post(login(personas.member), "/api/planning-requests/", body | {"schedulers": ["x"]})
    assert bad.status_code == 400 and "schedulers" in bad.json()
    response = _post(login(personas.member), "/api/planning-requests/", body)
    assert response.status_code == 201
    planning = PlanningRequest.objects.get(pk=response.json()["id"])
    services.solve_request(planning.pk)

    token = Token.objects.create(user=personas.viewer)
    api = login(personas.outsider)
    api.logout()
    got = api.get(f"/api/planning-requests/{planning.pk}/",
                  HTTP_AUTHORIZATION=f"Token {token.key}").json()
    assert {r["scheduler"] for r in got["results"]} == {"exact", "homogeneous"}
    exact = next(r for r in got["results"] if r["scheduler"] == "exact")
    assert exact["gap_to_exact"] == 0 and exact["plan"]["feasible"] is True
    assert got["instance"]["throughput_target"] == 50_000
    assert exact["cost_per_million_samples"] == pytest.approx(
        exact["cost_per_hour"] / (exact["throughput"] * 3600) * 1e6)

    outsider = login(personas.outsider)
    assert outsider.get(f"/api/planning-requests/{planning.pk}/").status_code == 404
    assert outsider.get(f"/api/plan-results/{exact['id']}/").status_code == 404
    assert outsider.get("/api/planning-requests/").json()["count"] == 0


def test_what_if_over_the_api(personas: Any, login: Any, profiled: Any, cluster: Any) -> None:
    planning = services.start_planning(personas.member, profiled.model, cluster, 50_000,
                                       ["exact"])
    services.solve_request(planning.pk)
    result = planning.results.get()
    url = f"/api/plan-results/{result.pk}/what-if/"
    resource = result.plan["stages"][0]["resource"]
    answer = _post(login(personas.viewer), url, {"resource": resource, "count": 1})
    assert answer.status_code == 200 and answer.json()["change"].startswith(resource)
    assert _post(login(personas.viewer), url, {"resource": "tpu", "count": 1}).json() == {
        "resource": ["no resource 'tpu' in this plan's cluster"]}
    assert _post(login(personas.outsider), url, {"resource": resource}).status_code == 404


def test_clusters_over_the_api(personas: Any, login: Any, catalogue: list[Any]) -> None:
    body = {"project": personas.project.pk, "name": "gpus",
            "resource_types": [r.pk for r in catalogue[1:]]}
    assert _post(login(personas.viewer), "/api/clusters/", body).status_code == 403
    assert _post(login(personas.outsider), "/api/clusters/", body).status_code == 404
    created = _post(login(personas.member), "/api/clusters/", body)
    assert created.status_code == 201
    assert sorted(created.json()["resource_types"]) == sorted(r.pk for r in catalogue[1:])
    again = _post(login(personas.member), "/api/clusters/", body)
    assert again.status_code == 409  # the present state refuses it
    assert again.json() == {"name": ["a cluster called 'gpus' already exists"]}
