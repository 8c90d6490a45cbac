"""A job says where the figures it was planned with come from, per resource type of its
plan: on its page and in the API, for non-staff members and viewers (issue 21 item 6)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND
from webapp.jobs import figures, services
from webapp.jobs.services import RunOptions
from webapp.planning import services as planning

pytestmark = pytest.mark.django_db
BAND = f"±{100 * ESTIMATE_ERROR_BAND:.0f}%"


@pytest.fixture
def planned_job(personas: Any, profiled: Any, cluster: Any) -> Any:
    request = planning.start_planning(personas.member, profiled.model, cluster, 50_000,
                                      ["exact"])
    planning.solve_request(request.pk)
    result = request.results.get(chosen=True)
    return services.approve_plan(personas.member, result, RunOptions(steps=8), start=False)


def test_the_job_page_and_api_show_each_plan_types_tier(
        personas: Any, login: Any, planned_job: Any) -> None:
    types = {s["resource"] for s in planned_job.plan["stages"]}
    # a zoo model with sparse tables: its plan places the parameter server, on a type too
    server = planned_job.plan["parameter_server"]
    assert server is not None
    types.add(server["resource"])
    tiers = figures.figure_tiers(planned_job)
    assert set(tiers) == types and all(r.tier == "estimated" for r in tiers.values())
    page = login(personas.viewer).get(f"/jobs/{planned_job.pk}/").content.decode()
    assert 'id="figure-tiers"' in page
    for name in types:
        assert f'data-resource="{name}" data-tier="estimated"' in page
    assert f"estimated {BAND}" in page
    client = APIClient()
    client.force_authenticate(personas.member)
    data = client.get(f"/api/jobs/{planned_job.pk}/").json()
    assert set(data["figure_tiers"]) == types
    assert all(t["tier"] == "estimated" and BAND in t["label"]
               for t in data["figure_tiers"].values())


def test_a_job_without_its_planning_result_says_not_recorded(
        personas: Any, login: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8), start=False)
    tiers = figures.figure_tiers(job)
    assert set(tiers) == {s["resource"] for s in job.plan["stages"]}
    assert {r.tier for r in tiers.values()} == {"unknown"}
    page = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert "not recorded" in page


def test_a_result_row_without_a_valid_instance_reads_as_not_recorded(
        personas: Any, plan_result: Any) -> None:
    job = services.approve_plan(personas.member, plan_result, RunOptions(steps=8), start=False)
    assert {r.tier for r in figures.figure_tiers(job).values()} == {"unknown"}
