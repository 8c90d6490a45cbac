"""The plan page with spot offers (issue 26): each stage's market and checkpoint interval,
and the expected interruptions over the job; a cluster without offers shows neither."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.catalogue import services as catalogue_services
from webapp.planning import services
from webapp.planning.models import PlanResult

pytestmark = pytest.mark.django_db

TARGET = 50_000.0


def _solved(personas: Any, profiled: Any, cluster: Any) -> PlanResult:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                      ["exact"], samples=1e10)
    services.solve_request(request.pk)
    return PlanResult.objects.get(request=request, scheduler="exact")


def test_a_spot_plan_shows_markets_checkpoints_and_interruptions(
        personas: Any, profiled: Any, catalogue: list[Any], login: Any) -> None:
    for resource_type in catalogue:  # spot at a tenth of list: every stage takes it
        _offer_spot(personas, resource_type)
    cluster = services.create_cluster(personas.member, personas.project, "spot", catalogue)
    result = _solved(personas, profiled, cluster)
    assert result.feasible
    stages = result.plan["stages"]
    assert {s["market"] for s in stages} == {"spot"}
    expected = result.plan["expected_interruptions"]
    assert expected > 0
    page = login(personas.viewer).get(f"/planning/result/{result.pk}/").content.decode()
    assert 'data-market="spot"' in page
    assert f'{stages[0]["checkpoint_every"]}</td>' in page
    assert 'id="expected-interruptions"' in page and f"{expected:.2f}" in page
    assert 'id="market-note"' in page
    # The saving against the same request solved with no spot offers at all.
    optimum = result.request.on_demand_optimum
    assert optimum["feasible"] and optimum["cost_per_hour"] > result.cost_per_hour
    saving = optimum["cost_per_hour"] - result.cost_per_hour
    assert 'id="spot-saving"' in page and f"${saving:,.3f} per hour less" in page
    assert f"against ${optimum['cost_per_hour']:.3f}/h all on demand" in page
    api = login(personas.viewer).get(f"/api/planning-requests/{result.request_id}/").json()
    assert api["on_demand_optimum"] == optimum
    # The stage's row is priced at the spot price, not the on-demand one.
    first = stages[0]
    spot = next(r for r in catalogue if r.name == first["resource"]).spot_price
    assert f"${first['units'] * spot:.3f}/h" in page


def test_an_on_demand_plan_has_no_market_columns(personas: Any, profiled: Any,
                                                 cluster: Any, login: Any) -> None:
    result = _solved(personas, profiled, cluster)
    assert result.feasible and "expected_interruptions" not in result.plan
    assert all("market" not in s for s in result.plan["stages"])
    page = login(personas.member).get(f"/planning/result/{result.pk}/").content.decode()
    assert "data-market" not in page and "expected-interruptions" not in page
    assert result.request.on_demand_optimum is None and "spot-saving" not in page


def _offer_spot(personas: Any, resource_type: Any) -> None:
    catalogue_services.update(personas.member, resource_type, {
        "spot_price": resource_type.price_per_hour / 10, "interruptions_per_hour": 0.01,
        "restart_s": 60})
    resource_type.refresh_from_db()
