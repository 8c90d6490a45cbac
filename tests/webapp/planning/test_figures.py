"""Plans say where each resource type's figures come from (measured here / by an agent /
estimated with the validation's band) and whether mixing types pays: the pages, the API and
the stored instance, seen by non-staff members and viewers (issue 21 items 6 and 8)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from heterps_core import schedulers
from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND
from heterps_core.instance import Instance
from heterps_core.provenance import Tier, of_instance
from webapp.catalogue.models import ResourceType
from webapp.planning import results, services
from webapp.planning.models import PlanningRequest
from webapp.profiling import remote
from webapp.profiling.models import Origin, ProfileRun, ResourceProfile

pytestmark = pytest.mark.django_db
BAND = f"±{100 * ESTIMATE_ERROR_BAND:.0f}%"


@pytest.fixture
def solved(personas: Any, profiled: ProfileRun, cluster: Any) -> PlanningRequest:
    request = services.start_planning(personas.member, profiled.model, cluster, 50_000,
                                      ["exact", "greedy"], samples=1e9)
    services.solve_request(request.pk)
    return request


def test_the_stored_instance_carries_each_types_tier(solved: PlanningRequest) -> None:
    instance = Instance.from_dict(solved.instance)
    records = of_instance(instance)
    # no agent measured anything: every catalogue type is the roofline, with its band
    assert records and {r.tier for r in records.values()} == {Tier.ESTIMATED}
    assert {r.band for r in records.values()} == {ESTIMATE_ERROR_BAND}
    assert results.figure_tiers(solved) == records


def test_the_pages_show_the_tiers_and_the_ratio(personas: Any, login: Any,
                                                solved: PlanningRequest) -> None:
    client = login(personas.viewer)
    page = client.get(f"/planning/{solved.pk}/").content.decode()
    assert 'id="figure-tiers"' in page and f"estimated {BAND}" in page
    for resource in solved.instance["resources"]:
        assert f'data-resource="{resource["name"]}" data-tier="estimated"' in page
    chosen = solved.results.get(chosen=True)
    # the ratio against the best single-type plan, stages and parameter server on that type
    # (a zoo model with sparse tables: its instance has the server role; a type that may not
    # host the server has no single-type plan)
    hosts = solved.instance["parameter_server"]["hosts"]
    best = min(
        (p for p in (schedulers.create("exact").plan(_only(solved.instance, name))
                     for name in hosts) if p.feasible),
        key=lambda p: p.cost_per_hour or 0.0)
    assert best.parameter_server is not None
    ratio = (best.cost_per_hour or 0.0) / chosen.cost_per_hour
    assert 'id="heterogeneity"' in page and f"({ratio:.2f}x)" in page
    result_page = client.get(f"/planning/result/{chosen.pk}/").content.decode()
    assert 'id="heterogeneity"' in result_page and f"{ratio:.2f}x" in result_page
    # the server's shards are a row of the plan, priced like a stage
    assert "parameter-server shards (the tables)" in result_page
    assert 'data-tier="estimated"' in result_page and 'id="plan-figures"' in result_page


def test_the_api_gives_the_tiers_to_a_member(personas: Any, solved: PlanningRequest) -> None:
    client = APIClient()
    client.force_authenticate(personas.member)
    data = client.get(f"/api/planning-requests/{solved.pk}/").json()
    tiers = data["figure_tiers"]
    assert set(tiers) == {r["name"] for r in solved.instance["resources"]}
    assert all(t["tier"] == "estimated" and t["measured"] is False for t in tiers.values())
    assert all(BAND in t["label"] for t in tiers.values())
    for result in data["results"]:
        plan = result["plan"] or {}
        used = {s["resource"] for s in plan.get("stages", [])}
        if plan.get("parameter_server"):
            used.add(plan["parameter_server"]["resource"])
        assert set(result["figure_tiers"]) == used


def _only(instance: dict[str, Any], name: str) -> Instance:
    """The instance with one resource type (a server host), the server role on it."""
    data = {**instance, "resources": [r for r in instance["resources"] if r["name"] == name]}
    data["layers"] = [{**layer, "compute_s": {k: v for k, v in layer["compute_s"].items()
                                              if k == name}} for layer in instance["layers"]]
    for layer in data["layers"]:
        layer.pop("compute_spread", None)
    role = instance["parameter_server"]
    data["parameter_server"] = {"hosts": [name],
                                "row_s": {k: v for k, v in role["row_s"].items() if k == name}}
    return Instance.from_dict(data)


def test_an_agents_type_plans_as_measured_by_an_agent(
    personas: Any, profiled: ProfileRun, cluster: Any, login: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = ResourceProfile.objects.create(
        run=profiled, resource="cpu-96", origin=Origin.WAITING,
        resource_type=ResourceType.objects.get(project=personas.project, name="cpu-96"))
    assert remote.measure_here(profiled.pk, origin.pk, "cpu-96@machine-7")["status"] == (
        "measured")
    request = services.start_planning(personas.member, profiled.model, cluster, 1_000,
                                      ["exact"])
    tiers = results.figure_tiers(request)
    assert tiers["cpu-96"].tier is Tier.AGENT and tiers["cpu-96"].measured
    assert tiers["cpu-96"].device.startswith("cpu-96@machine-7: cpu (1 threads")
    assert all(r.tier is Tier.ESTIMATED for name, r in tiers.items() if name != "cpu-96")
    services.solve_request(request.pk)
    page = login(personas.viewer).get(f"/planning/{request.pk}/").content.decode()
    assert 'data-resource="cpu-96" data-tier="measured-agent"' in page
    assert "measured by an agent of its type (cpu-96@machine-7" in page


def test_a_request_stored_before_tiers_reads_from_its_figures(
        solved: PlanningRequest) -> None:
    for resource in solved.instance["resources"]:
        resource.pop("provenance")
    solved.provenance[0] = {**solved.provenance[0], "source": "measured"}
    for figure in solved.provenance:
        figure.pop("tier", None)
    solved.save()
    tiers = results.figure_tiers(solved)
    first = solved.provenance[0]["resource"]
    # measured, but an old record does not say where: unknown, never "measured here"
    assert tiers[first].tier is Tier.UNKNOWN
    assert {r.tier for n, r in tiers.items() if n != first} == {Tier.ESTIMATED}


def test_an_estimated_type_says_why_no_agent_measured_it(
        personas: Any, profiled: ProfileRun, cluster: Any) -> None:
    ResourceProfile.objects.create(
        run=profiled, resource="t4", origin=Origin.ESTIMATED,
        resource_type=ResourceType.objects.get(project=personas.project, name="t4"),
        note=remote.roofline_note("no worker serves t4 (queue heterps.res.t4)"))
    request = services.start_planning(personas.member, profiled.model, cluster, 1_000,
                                      ["exact"])
    t4 = results.figure_tiers(request)["t4"]
    assert t4.tier is Tier.ESTIMATED
    assert t4.label() == (f"estimated {BAND} (roofline for t4; no worker serves t4 "
                          "(queue heterps.res.t4))")
