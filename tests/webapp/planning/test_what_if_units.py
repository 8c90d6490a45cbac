"""The what-if's answer states its difference with a unit (issue 25.11: "-0.360" alone)."""

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
                                      ["exact"], samples=1e9)
    services.solve_request(request.pk)
    return request


@pytest.mark.parametrize(("factor", "sign"), [(10.0, "+$"), (0.5, "\u2212$")])
def test_the_difference_has_its_unit_and_sign(personas: Any, login: Any,
                                              solved: PlanningRequest, factor: float,
                                              sign: str) -> None:
    exact = solved.results.get(scheduler="exact")
    stage = exact.plan["stages"][0]
    price = next(r["price_per_hour"] for r in exact.instance["resources"]
                 if r["name"] == stage["resource"])
    response = login(personas.member).post(
        f"/planning/result/{exact.pk}/",
        {"resource": stage["resource"], "price_per_hour": str(price * factor)})
    summary = response.context["what_if"]["summary"]
    assert f", {sign}" in summary and " per hour (" in summary, summary
    assert "$-" not in summary and "(-" not in summary
    assert html.escape(summary, quote=False) in response.content.decode()
