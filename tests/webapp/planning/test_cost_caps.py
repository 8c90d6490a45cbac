"""Cost caps on a planning request (issue 26.4): form, API and service take max $/h and
max $ in total, the schedulers keep to them, and a request no plan can meet says what the
target needs (the core's diagnostic) as the result's reason, on the page too."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.planning import services
from webapp.planning.models import PlanningRequest, PlanResult

pytestmark = pytest.mark.django_db

TARGET = 50_000.0


def _errors(call: Any) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as err:
        call()
    return err.value.message_dict


def test_bad_caps_name_the_field(personas: Any, profiled: Any, cluster: Any) -> None:
    def start(**caps: Any) -> Any:
        return services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                       ["exact"], **caps)

    assert "greater than 0" in " ".join(_errors(lambda: start(max_hourly_cost=0))[
        "max_hourly_cost"])
    assert "at most" in " ".join(_errors(lambda: start(max_hourly_cost=1e9))["max_hourly_cost"])
    assert "needs samples" in " ".join(_errors(lambda: start(max_total_cost=10.0))[
        "max_total_cost"])
    assert not PlanningRequest.objects.exists()


def test_a_cap_below_the_optimum_says_what_the_target_needs(personas: Any, profiled: Any,
                                                           cluster: Any) -> None:
    free = services.start_planning(personas.member, profiled.model, cluster, TARGET, ["exact"])
    services.solve_request(free.pk)
    optimum = PlanResult.objects.get(request=free, scheduler="exact").cost_per_hour
    assert optimum is not None and optimum > 0

    capped = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                     ["exact"], max_hourly_cost=optimum / 2)
    services.solve_request(capped.pk)
    result = PlanResult.objects.get(request=capped, scheduler="exact")
    assert not result.feasible and not result.chosen
    reason = result.plan["reason"]
    assert reason.startswith("no plan: the target needs at least $")
    assert f"${optimum:,.3f}/h" in reason

    roomy = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                    ["exact"], max_hourly_cost=optimum * 2)
    services.solve_request(roomy.pk)
    kept = PlanResult.objects.get(request=roomy, scheduler="exact")
    assert kept.feasible and kept.cost_per_hour == pytest.approx(optimum)


def test_a_total_cap_is_kept_or_explained(personas: Any, profiled: Any, cluster: Any) -> None:
    capped = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                     ["exact"], samples=1e9, max_total_cost=0.001)
    services.solve_request(capped.pk)
    result = PlanResult.objects.get(request=capped, scheduler="exact")
    assert not result.feasible
    assert result.plan["reason"].startswith("no plan:")
    assert "the total cap of $0.00" in result.plan["reason"]  # words, no CLI flag


def test_member_sets_caps_through_the_api_and_viewer_cannot(personas: Any, profiled: Any,
                                                            cluster: Any, login: Any) -> None:
    body = {"model": profiled.model.pk, "cluster": cluster.pk, "throughput_target": TARGET,
            "schedulers": ["exact"], "max_hourly_cost": 0.001}
    url = "/api/planning-requests/"
    made = login(personas.member).post(url, body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["max_hourly_cost"] == 0.001
    assert made.json()["max_total_cost"] is None
    bad = login(personas.member).post(url, {**body, "max_total_cost": 5},
                                      content_type="application/json")
    assert bad.status_code == 400 and "max_total_cost" in bad.json()
    refused = login(personas.viewer).post(url, body, content_type="application/json")
    assert refused.status_code in (403, 404)
    assert PlanningRequest.objects.count() == 1


def test_the_page_shows_the_caps_and_the_diagnostic(personas: Any, profiled: Any,
                                                   cluster: Any, login: Any) -> None:
    client = login(personas.member)
    form = client.get(f"/planning/project/{personas.project.pk}/").content.decode()
    assert 'name="max_hourly_cost"' in form and 'name="max_total_cost"' in form
    posted = client.post(f"/planning/project/{personas.project.pk}/new/", {
        "model": profiled.model.pk, "cluster": cluster.pk, "throughput_target": TARGET,
        "schedulers": ["exact"], "budget_s": 1, "max_hourly_cost": "0.001"})
    assert posted.status_code == 302, posted.content.decode()[:2000]
    request = PlanningRequest.objects.get()
    assert request.max_hourly_cost == 0.001
    services.solve_request(request.pk)
    page = client.get(f"/planning/{request.pk}/").content.decode()
    assert "at most $0.001/h" in page
    assert "exact: no plan: the target needs at least $" in page
