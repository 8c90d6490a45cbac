"""Does heterogeneity pay: the plan against the best plan on one type (stages and server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core import schedulers
from heterps_core.costmodel import evaluate
from heterps_core.generate import random_instance, with_parameter_server
from heterps_core.heterogeneity import (
    compare,
    single_type_instance,
    single_type_plan,
    stage_bounds,
    types_used,
)
from heterps_core.instance import Instance
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).parent / "schedulers" / "data"


def load(name: str) -> Instance:
    return Instance.load(DATA / name)


def raw(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


@pytest.mark.parametrize("seed", range(6))
def test_without_a_server_the_best_single_type_is_the_homogeneous_schedulers(seed: int) -> None:
    inst = random_instance(seed, 10, 4)
    plan = exact_plan(inst)
    result = compare(inst, plan)
    reference = schedulers.create("homogeneous").plan(inst)
    assert (result.best is None) == (not reference.feasible)
    if result.best is not None:
        assert result.best.cost_per_hour == pytest.approx(reference.cost_per_hour, rel=1e-9)
        assert result.ratio == pytest.approx(reference.cost_per_hour / plan.cost_per_hour)
        # the optimum is never dearer than any single-type plan
        assert result.ratio >= 1 - 1e-9


def test_the_server_counts_as_part_of_the_mix() -> None:
    inst = load("tiny_v2.json")
    plan = exact_plan(inst)
    # every stage on one type, the shards on another: heterogeneous
    assert len({s.resource for s in plan.stages}) == 1 and plan.parameter_server is not None
    result = compare(inst, plan)
    assert result.heterogeneous and result.mix == types_used(plan)
    assert len(set(result.mix)) == 2
    for name, single in result.per_type.items():
        assert set(types_used(single)) <= {name}
    # a type that may not host the server has no plan of this instance on it alone
    gpu = result.per_type["gpu"]
    assert not gpu.feasible and "gpu cannot host the parameter server" in (gpu.reason or "")
    # a host keeps the server, on itself only
    cpu = result.per_type["cpu"]
    assert cpu.parameter_server is not None and cpu.parameter_server.resource == "cpu"
    costs = [p.cost_per_hour for p in result.per_type.values() if p.feasible]
    assert result.best is not None and result.best.cost_per_hour == min(costs)
    assert result.ratio == pytest.approx(min(costs) / plan.cost_per_hour)


@pytest.mark.parametrize("seed", range(8))
def test_the_optimum_is_never_dearer_than_a_single_type_plan(seed: int) -> None:
    inst = with_parameter_server(random_instance(seed, 8, 4).as_v2(("async", "bsp")[seed % 2]))
    plan = exact_plan(inst)
    result = compare(inst, plan)
    assert plan.feasible
    for single in result.per_type.values():
        if single.feasible:
            assert len(types_used(single)) == 1
            assert (single.cost_per_hour or 0) >= (plan.cost_per_hour or 0) * (1 - 1e-9)
    assert result.ratio is None or result.ratio >= 1 - 1e-9


@pytest.mark.parametrize("sync", ["async", "bsp"])
def test_single_type_plans_are_priced_by_the_same_model(sync: str) -> None:
    inst = with_parameter_server(random_instance(3, 8, 3).as_v2(sync))
    for name in inst.resource_names:
        single = single_type_plan(inst, name)
        restricted = single_type_instance(inst, name)
        if isinstance(restricted, str):
            assert not single.feasible and restricted in (single.reason or "")
            continue
        again = evaluate(restricted, [name] * len(inst.layers))
        assert single.feasible == again.feasible
        if single.feasible:
            assert single.cost_per_hour == pytest.approx(again.cost_per_hour, rel=1e-9)
            assert single.sync == sync


def test_a_type_that_cannot_run_a_layer_says_so() -> None:
    inst = load("caps.json")
    result = compare(inst, exact_plan(inst))
    blocked = [p for p in result.per_type.values() if not p.feasible]
    assert blocked and all(p.reason for p in blocked)
    assert "cannot run on gpu-b" in (result.per_type["gpu-b"].reason or "")


def test_when_no_single_type_can_run_the_model_there_is_no_ratio() -> None:
    data = raw("tiny.json")
    del data["layers"][0]["compute_s"]["gpu"]  # embedding only on the CPU
    del data["layers"][1]["compute_s"]["cpu"]  # fc1 only on the GPU
    inst = Instance.from_dict(data)
    plan = exact_plan(inst)
    result = compare(inst, plan)
    assert plan.feasible and result.best is None and result.ratio is None
    assert "no single resource type" in result.summary()
    assert result.to_dict()["ratio"] is None


def test_a_homogeneous_optimum_has_ratio_one() -> None:
    data = raw("tiny.json")
    for layer in data["layers"]:
        layer["compute_s"]["cpu"] *= 100  # the CPU is hopeless: all on gpu
    inst = Instance.from_dict(data)
    plan = exact_plan(inst)
    result = compare(inst, plan)
    assert not result.heterogeneous and result.ratio == pytest.approx(1.0)
    assert result.summary().endswith("the best single-type plan itself")


def test_stage_bounds_name_the_largest_term_and_what_sets_the_units() -> None:
    inst = load("tiny.json")
    all_gpu = evaluate(inst, ["gpu"] * 3)
    (bound,) = stage_bounds(inst, all_gpu)
    shape_compute = sum(layer.compute_s["gpu"] for layer in inst.layers)
    units = all_gpu.stages[0].units or 0
    assert bound.bound == "compute" and bound.units == units
    assert bound.share == pytest.approx(shape_compute / all_gpu.stages[0].time_per_batch_s)
    # 100 GB of tables on 32 GB units: memory, not the target, sets the units
    assert units > 1 and bound.units_set_by == "memory"
    assert "units set by memory" in bound.describe(inst)
