"""Planning pages: owner/member/viewer see them, the outsider gets 404; forms name the bad
field; the comparison, plan detail and what-if render what the services computed."""

from __future__ import annotations

import html
from typing import Any

import pytest

from webapp.planning import services
from webapp.planning.models import PlanningRequest

pytestmark = pytest.mark.django_db


@pytest.fixture
def solved(personas: Any, profiled: Any, cluster: Any) -> PlanningRequest:
    request = services.start_planning(personas.member, profiled.model, cluster, 50_000,
                                      ["exact", "homogeneous"], samples=1e9)
    services.solve_request(request.pk)
    return request


def _pages(request: PlanningRequest) -> list[str]:
    exact = request.results.get(scheduler="exact")
    return [f"/planning/project/{request.project_id}/", f"/planning/{request.pk}/",
            f"/planning/result/{exact.pk}/"]


def test_every_role_sees_the_pages_and_the_outsider_gets_404(
    personas: Any, login: Any, solved: PlanningRequest
) -> None:
    for user in (personas.owner, personas.member, personas.viewer):
        client = login(user)
        for url in _pages(solved):
            assert client.get(url).status_code == 200, (user, url)
    client = login(personas.outsider)
    for url in _pages(solved):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/planning/project/{solved.project_id}/new/", {}).status_code == 404
    assert client.post(f"/rl/start/{solved.pk}/", {}).status_code == 404


def test_the_comparison_shows_each_scheduler_with_its_dollar_figures(
    personas: Any, login: Any, solved: PlanningRequest
) -> None:
    page = login(personas.viewer).get(f"/planning/{solved.pk}/").content.decode()
    exact = solved.results.get(scheduler="exact")
    assert f"${exact.cost_per_hour:.3f}/h" in page
    assert "Cost per hour<br><span class=\"muted\">$ estimate, whole plan</span>" in page
    assert "✓ chosen" in page and 'data-scheduler="homogeneous"' in page
    assert 'id="scatter"' in page and "plan-chart-data" in page
    # A viewer may look but not start anything.
    assert 'id="rl-form"' not in page


def test_the_planning_form_names_the_bad_field(personas: Any, login: Any, profiled: Any,
                                               cluster: Any) -> None:
    client = login(personas.member)
    url = f"/planning/project/{personas.project.pk}/new/"
    response = client.post(url, {"model": profiled.model.pk, "cluster": cluster.pk,
                                 "throughput_target": "-3", "schedulers": ["exact"],
                                 "budget_s": "5"})
    assert response.status_code == 400
    assert "must be greater than 0, got -3.0" in response.content.decode()
    response = client.post(url, {"model": profiled.model.pk, "cluster": cluster.pk,
                                 "throughput_target": "50000", "batch_size": "999",
                                 "schedulers": ["exact"], "budget_s": "5"})
    assert response.status_code == 400
    assert "no profile of ctr_dnn-tiny at batch size 999; profiled at 64" in (
        response.content.decode())
    response = client.post(url, {"model": profiled.model.pk, "cluster": cluster.pk,
                                 "throughput_target": "50000", "schedulers": ["exact"],
                                 "budget_s": "5"})
    planning = PlanningRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/planning/{planning.pk}/"
    assert login(personas.viewer).post(url, {}).status_code == 403


def test_the_plan_detail_explains_and_answers_what_if_in_place(
    personas: Any, login: Any, solved: PlanningRequest
) -> None:
    exact = solved.results.get(scheduler="exact")
    client = login(personas.viewer)
    page = client.get(f"/planning/result/{exact.pk}/").content.decode()
    assert "Binding stage:" in page and "binding</span>" in page
    resource = exact.plan["stages"][0]["resource"]
    response = client.post(f"/planning/result/{exact.pk}/",
                           {"resource": resource, "price_per_hour": "1000"})
    assert response.status_code == 200
    answer = response.context["what_if"]
    assert answer["after"]["cost_per_hour"] > exact.cost_per_hour
    assert html.escape(answer["summary"], quote=False) in response.content.decode()
    response = client.post(f"/planning/result/{exact.pk}/", {"resource": resource})
    assert response.status_code == 400
    assert "give a new price or a new count" in response.content.decode()


def test_a_cluster_form_error_names_the_field(personas: Any, login: Any,
                                              catalogue: list[Any]) -> None:
    client = login(personas.member)
    url = f"/planning/project/{personas.project.pk}/clusters/new/"
    response = client.post(url, {"name": "gpus"})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    response = client.post(url, {"name": "gpus", "resource_types": [catalogue[1].pk]})
    assert response.status_code == 302
