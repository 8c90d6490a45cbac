"""Planning services: clusters, requests built from a profile, every scheduler's result with
its gap to the exact optimum, the chosen plan, the frontier, explanations and what-if."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.progress import Progress
from webapp.background.models import Status, Work
from webapp.background.services import run_work
from webapp.planning import results, services
from webapp.planning.models import PlanResult
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db

TARGET = 50_000.0


def _errors(call: Any) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as err:
        call()
    return err.value.message_dict


def test_a_cluster_needs_a_name_and_types_of_its_own_project(personas: Any,
                                                             catalogue: list[Any]) -> None:
    project = personas.project
    assert "name" in _errors(lambda: services.create_cluster(personas.member, project, " ",
                                                             catalogue))
    assert "resource_types" in _errors(
        lambda: services.create_cluster(personas.member, project, "x", []))
    services.create_cluster(personas.member, project, "gpus", catalogue[1:])
    assert _errors(lambda: services.create_cluster(personas.owner, project, "gpus", catalogue)
                   ) == {"name": ["a cluster called 'gpus' already exists"]}
    with pytest.raises(PermissionDenied):
        services.create_cluster(personas.viewer, project, "v", catalogue)
    with pytest.raises(Http404):
        services.create_cluster(personas.outsider, project, "o", catalogue)


def test_a_model_without_a_profile_cannot_be_planned(personas: Any, zoo_model: Any,
                                                     cluster: Any) -> None:
    errors = _errors(lambda: services.start_planning(personas.member, zoo_model, cluster,
                                                     TARGET, ["exact"]))
    assert errors == {"model": [f"{zoo_model.name} has no profile yet; profile it first"]}


def test_bad_requests_name_the_field(personas: Any, profiled: Any, cluster: Any) -> None:
    model = profiled.model
    start = services.start_planning
    assert "throughput_target" in _errors(
        lambda: start(personas.member, model, cluster, -5, ["exact"]))
    assert _errors(lambda: start(personas.member, model, cluster, 1e15, ["exact"])) == {
        "throughput_target": ["must be a number of samples/s greater than 0 and at most 1e+12"]}
    assert "schedulers" in _errors(lambda: start(personas.member, model, cluster, TARGET, []))
    assert _errors(lambda: start(personas.member, model, cluster, TARGET, ["teleport"])
                   )["schedulers"][0].startswith("unknown: teleport")
    assert _errors(lambda: start(personas.member, model, cluster, TARGET, ["exact"],
                                 batch_size=999)) == {
        "batch_size": [f"no profile of {model.name} at batch size 999; profiled at 64"]}
    assert "budget_s" in _errors(lambda: start(personas.member, model, cluster, TARGET,
                                               ["exact"], budget_s=0))
    with pytest.raises(PermissionDenied):
        start(personas.viewer, model, cluster, TARGET, ["exact"])


def test_the_instance_comes_from_the_profile_and_the_cluster(personas: Any, profiled: Any,
                                                             cluster: Any) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                      ["exact"], samples=1e9)
    instance = Instance.from_dict(request.instance)
    assert instance.batch_size == 64 and instance.throughput_target == TARGET
    assert instance.resource_names == [r.name for r in cluster.resource_types.all()]
    assert [layer.name for layer in instance.layers] == profiled.model.layer_names()
    prices = {r.name: r.price_per_hour for r in cluster.resource_types.all()}
    assert {r.name: r.price_per_hour for r in instance.resources} == prices
    # Nothing was measured on the cluster's hardware: every figure says it is an estimate.
    assert {f["source"] for f in request.provenance} == {"estimated"}
    assert len(request.provenance) == len(instance.layers) * len(instance.resources)
    assert request.work.kind == "plan" and request.work.status == Status.QUEUED


def test_solving_stores_one_result_per_scheduler_with_gaps_and_the_chosen_plan(
    personas: Any, profiled: Any, cluster: Any
) -> None:
    names = [n for n in ("exact", "homogeneous", "brute") if n in services.available_schedulers()]
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET, names,
                                      samples=1e9, budget_s=1)
    seen: list[Progress] = []
    summary = services.solve_request(request.pk, seen.append)
    results = {r.scheduler: r for r in request.results.all()}
    assert set(results) == set(names)
    exact = results["exact"]
    instance = Instance.from_dict(request.instance)
    # The stored plan is the cost model's verdict on its own assignment.
    again = evaluate(instance, exact.plan["assignment"])
    assert exact.feasible and exact.cost_per_hour == pytest.approx(again.cost_per_hour)
    assert exact.gap_to_exact == 0
    for result in results.values():
        assert result.cost_per_hour >= exact.cost_per_hour * (1 - 1e-9)
        assert result.gap_to_exact == pytest.approx(result.cost_per_hour / exact.cost_per_hour - 1)
        assert result.throughput >= TARGET * (1 - 1e-9)
        assert result.solve_time_s >= 0
    chosen = [r for r in results.values() if r.chosen]
    assert len(chosen) == 1 and chosen[0].cost_per_hour == pytest.approx(exact.cost_per_hour)
    assert summary["chosen"] == chosen[0].scheduler
    assert seen[-1].current == seen[-1].total
    # The frontier: exact optima for a sweep of targets, cost not falling as targets rise.
    request.refresh_from_db()
    costs = [p["cost_per_hour"] for p in request.frontier if p["feasible"]]
    assert len(costs) > 3 and costs == sorted(costs)


def test_solving_again_replaces_the_results(personas: Any, profiled: Any, cluster: Any) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET, ["exact"])
    services.solve_request(request.pk)
    services.solve_request(request.pk)
    assert request.results.count() == 1


def test_the_work_kind_runs_the_request_and_records_the_outcome(
    personas: Any, profiled: Any, cluster: Any
) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                      ["exact", "homogeneous"])
    run_work(request.work.pk)
    work = Work.objects.get(pk=request.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    assert work.result["request"] == request.pk and work.result["feasible"] == 2


def test_an_impossible_target_is_infeasible_with_a_reason(personas: Any, profiled: Any,
                                                          cluster: Any) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, 1e8, ["exact"])
    services.solve_request(request.pk)
    result = request.results.get()
    assert not result.feasible and not result.chosen and result.gap_to_exact is None
    assert result.plan["reason"]
    rows = results.comparison(request)
    assert rows[0]["reason"] == result.plan["reason"]


def test_explanation_names_the_binding_stage_and_the_losers(personas: Any, profiled: Any,
                                                            cluster: Any) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET,
                                      ["exact", "homogeneous"])
    services.solve_request(request.pk)
    exact = request.results.get(scheduler="exact")
    data = results.explanation(exact)
    stages = exact.plan["stages"]
    slowest = min(range(len(stages)), key=lambda i: stages[i]["throughput"])
    assert data["binding_stage"] == slowest
    assert data["binding"].startswith(f"stage {slowest + 1} ")
    assert [s["scheduler"] for s in data["schedulers"]] == ["homogeneous"]
    homogeneous = request.results.get(scheduler="homogeneous")
    same = homogeneous.plan["assignment"] == exact.plan["assignment"]
    assert (data["schedulers"][0]["verdict"] == "found the same plan") == same
    assert data["alternatives"]
    rows = results.stage_rows(exact)
    prices = {r["name"]: r["price_per_hour"] for r in request.instance["resources"]}
    assert sum(r["cost_per_hour"] for r in rows) == pytest.approx(exact.cost_per_hour)
    assert all(r["cost_per_hour"] == r["units"] * prices[r["resource"]] for r in rows)


def test_what_if_replans_with_a_changed_price_without_storing(personas: Any, profiled: Any,
                                                              cluster: Any) -> None:
    request = services.start_planning(personas.member, profiled.model, cluster, TARGET, ["exact"])
    services.solve_request(request.pk)
    exact = request.results.get()
    used = exact.plan["stages"][0]["resource"]
    price = next(r["price_per_hour"] for r in request.instance["resources"] if r["name"] == used)
    answer = services.run_what_if(personas.viewer, exact, used, price * 100, None)
    assert answer["before"]["cost_per_hour"] == pytest.approx(exact.cost_per_hour)
    assert answer["after"]["cost_per_hour"] > exact.cost_per_hour
    assert answer["summary"].startswith(f"{used}: price_per_hour")
    assert PlanResult.objects.count() == 1
    assert "resource" in _errors(
        lambda: services.run_what_if(personas.member, exact, "tpu", 1, None))
    assert "price_per_hour" in _errors(
        lambda: services.run_what_if(personas.member, exact, used, None, None))
    assert "count" in _errors(lambda: services.run_what_if(personas.member, exact, used, None, 0))
    with pytest.raises(Http404):
        services.run_what_if(personas.outsider, exact, used, 1.0, None)
