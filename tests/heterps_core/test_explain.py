"""Explanations and what-if re-plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.errors import InstanceError
from heterps_core.explain import explain, verdict, what_if
from heterps_core.generate import random_instance, with_parameter_server
from heterps_core.instance import Instance
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).parent / "schedulers" / "data"


def test_binding_stage_is_the_slowest() -> None:
    inst = Instance.load(DATA / "caps.json")
    exp = explain(inst)
    slowest = min(range(len(exp.plan.stages)), key=lambda i: exp.plan.stages[i].throughput or 0)
    assert exp.binding_stage == slowest == 0
    assert "emb0 on cpu" in exp.binding
    assert "4 units, set by the target: 3 units would give" in exp.stage_notes[1]


def test_memory_bound_stage_is_explained() -> None:
    inst = Instance.load(DATA / "tiny.json")
    plan = evaluate(inst, ["gpu"] * 3)
    exp = explain(inst, plan)
    assert "set by memory: 3 units would need" in exp.stage_notes[0]


def test_runner_ups_lost_for_a_stated_reason() -> None:
    inst = Instance.load(DATA / "caps.json")
    exp = explain(inst)
    labels = {a.label for a in exp.alternatives}
    assert {"all on cpu", "all on gpu-a", "best without gpu-a"} <= labels
    chosen = exp.plan.cost_per_hour or 0
    for alt in exp.alternatives:
        if alt.plan.feasible:
            assert (alt.plan.cost_per_hour or 0) >= chosen * (1 - 1e-9)
            assert "more" in alt.verdict or "same cost" in alt.verdict
        else:
            assert alt.verdict.startswith("infeasible: ")
    by_label = {a.label: a for a in exp.alternatives}
    assert by_label["all on gpu-b"].verdict == "infeasible: layer emb0 cannot run on gpu-b"
    assert by_label["best without gpu-a"].verdict == "$0.200/h more (+1.0%)"


def test_verdict_on_equal_cost() -> None:
    inst = Instance.load(DATA / "tiny.json")
    plan = exact_plan(inst)
    assert verdict(plan, plan).startswith("same cost")


def test_without_a_resource_some_layer_cannot_run() -> None:
    inst = Instance.load(DATA / "caps.json")
    exp = explain(inst, evaluate(inst, ["cpu"] + ["gpu-a"] * 5))
    by_label = {a.label: a for a in exp.alternatives}
    assert "cpu" in by_label["best without gpu-a"].plan.assignment  # type: ignore[operator]


def test_what_if_replans_with_the_change() -> None:
    inst = Instance.load(DATA / "caps.json")
    cheaper = what_if(inst, "gpu-a", price_per_hour=2.0)
    direct = exact_plan(inst.with_resource("gpu-a", price_per_hour=2.0))
    assert cheaper.after.cost_per_hour == direct.cost_per_hour
    assert (cheaper.delta_cost_per_hour or 0) < 0
    fewer = what_if(inst, "cpu", count=1)
    assert (fewer.delta_cost_per_hour or 0) == pytest.approx(21.935 - 19.376)
    assert "count 4 -> 1" in fewer.summary()
    slower = what_if(inst, "gpu-b", network_gbps=1)
    assert slower.after.cost_per_hour is not None
    assert slower.after.cost_per_hour >= (slower.before.cost_per_hour or 0) * (1 - 1e-9)


def test_what_if_price_cut_never_raises_cost() -> None:
    for seed in range(5):
        inst = random_instance(seed, 12, 4, caps=seed % 2 == 0)
        for res in inst.resources:
            result = what_if(inst, res.name, price_per_hour=res.price_per_hour / 2)
            assert (result.delta_cost_per_hour or 0) <= 1e-9


def test_what_if_bad_input() -> None:
    inst = Instance.load(DATA / "tiny.json")
    with pytest.raises(InstanceError, match="no resource named"):
        what_if(inst, "tpu", price_per_hour=1)
    with pytest.raises(InstanceError, match="give a new"):
        what_if(inst, "gpu")
    with pytest.raises(InstanceError) as info:
        what_if(inst, "gpu", price_per_hour=-1)
    assert info.value.field == "resources[1].price_per_hour"


def test_best_without_a_server_host_keeps_the_server_on_the_other_hosts() -> None:
    inst = with_parameter_server(random_instance(0, 8, 3).as_v2("async"))
    plan = exact_plan(inst)
    hosts = set(inst.parameter_server.hosts) if inst.parameter_server else set()
    assert hosts & set(plan.assignment or ())  # a stage sits on a host type
    alternatives = explain(inst, plan).alternatives
    without = [a for a in alternatives if a.label.startswith("best without")]
    assert without
    for alt in without:
        gone = alt.label.removeprefix("best without ")
        if alt.plan.feasible:
            assert gone not in (alt.plan.assignment or ())
            assert alt.plan.parameter_server is None or alt.plan.parameter_server.resource != gone
        else:
            assert alt.plan.reason
