"""The cost model of the spec §2-§4 on the worked example, the examples' optima, and rules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heterps_core.costmodel import ChainCosts, evaluate, is_better, stages_of
from heterps_core.errors import InstanceError
from heterps_core.generate import random_instance
from heterps_core.instance import Instance

DATA = Path(__file__).parent / "schedulers" / "data"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def tiny() -> Instance:
    return Instance.load(DATA / "tiny.json")


def test_worked_example_cpu_gpu_gpu() -> None:
    plan = evaluate(tiny(), ["cpu", "gpu", "gpu"])
    assert plan.feasible
    first, second = plan.stages
    assert first.layers == (0,) and first.units == 1
    # C = 0.010, in = 2.0e6 / 3.125e9, out = 2 * 1.6e6 / 3.125e9 (spec §7)
    assert first.time_per_batch_s == pytest.approx(0.010 + 0.00064 + 0.001024, rel=1e-12)
    assert second.layers == (1, 2) and second.units == 1
    assert second.time_per_batch_s == pytest.approx(0.006 + 0.001024, rel=1e-12)
    assert plan.cost_per_hour == pytest.approx(3.6)
    assert plan.throughput == pytest.approx(1000 / 0.011664)
    assert plan.hours == pytest.approx(1e9 / plan.throughput / 3600)
    assert plan.total_cost == pytest.approx(3.6 * plan.hours)


def test_flushed_throughput_adds_the_stages_up_instead_of_overlapping_them() -> None:
    two = evaluate(tiny(), ["cpu", "gpu", "gpu"])
    assert two.flushed_throughput == pytest.approx(1000 / (0.011664 + 0.007024), rel=1e-9)
    assert two.flushed_throughput < two.throughput
    one = evaluate(tiny(), ["cpu"] * 3)  # 7 units in parallel: a single stage is unaffected
    assert one.flushed_throughput == pytest.approx(one.throughput)
    infeasible = evaluate(Instance.load(DATA / "infeasible.json"), ["cpu", "gpu", "gpu"])
    assert not infeasible.feasible and infeasible.flushed_throughput is None


def test_worked_example_all_cpu_needs_seven_units() -> None:
    plan = evaluate(tiny(), ["cpu"] * 3)
    (stage,) = plan.stages
    assert stage.units == 7
    k = 7
    expected_t = 0.13 + 0.00064 + 2 * (k - 1) / k * 3.0e6 / 3.125e9
    assert stage.time_per_batch_s == pytest.approx(expected_t, rel=1e-12)
    assert plan.cost_per_hour == pytest.approx(4.2)
    # six units would miss the target: the smallest k is chosen
    t6 = 0.13 + 0.00064 + 2 * 5 / 6 * 3.0e6 / 3.125e9
    assert 6 * 1000 / t6 < 50000


def test_worked_example_all_gpu_is_memory_bound() -> None:
    plan = evaluate(tiny(), ["gpu"] * 3)
    assert plan.stages[0].units == 4  # 100/4 + 0.7 = 25.7 <= 32, 100/3 + 0.7 > 32
    assert plan.cost_per_hour == pytest.approx(12.0)


@pytest.mark.parametrize("name", ["tiny.json", "caps.json"])
def test_expected_optimum_reproduced_by_evaluate(name: str) -> None:
    want = EXPECTED[name]
    plan = evaluate(Instance.load(DATA / name), want["assignment"])
    assert plan.feasible
    assert plan.cost_per_hour == pytest.approx(want["cost_per_hour"], rel=1e-9)
    assert plan.throughput == pytest.approx(want["throughput"], rel=1e-9)
    assert plan.total_cost == pytest.approx(want["total_cost"], rel=1e-6)
    got = [(list(s.layers), s.resource, s.units) for s in plan.stages]
    assert got == [(s["layers"], s["resource"], s["units"]) for s in want["stages"]]
    for stage, expected in zip(plan.stages, want["stages"], strict=True):
        assert stage.time_per_batch_s == pytest.approx(expected["time_per_batch_s"], abs=1e-8)


def test_stages_are_maximal_runs() -> None:
    assert stages_of(["cpu", "gpu", "gpu", "cpu"]) == [
        (0, 0, "cpu"), (1, 2, "gpu"), (3, 3, "cpu")
    ]
    assert stages_of(["gpu"]) == [(0, 0, "gpu")]


def test_non_adjacent_stages_share_the_count() -> None:
    inst = Instance.load(DATA / "caps.json")
    # cpu appears twice; each stage alone fits the cap of 4 but together they do not.
    plan = evaluate(inst, ["cpu", "cpu", "gpu-a", "gpu-a", "gpu-a", "cpu"])
    assert not plan.feasible
    assert plan.reason is not None and "cpu" in plan.reason


def test_layer_that_cannot_run_is_named() -> None:
    inst = Instance.load(DATA / "caps.json")
    plan = evaluate(inst, ["gpu-b"] * 6)
    assert not plan.feasible
    assert plan.reason == "layer emb0 cannot run on gpu-b"


def test_infeasible_example_names_the_units_it_lacks() -> None:
    inst = Instance.load(DATA / "infeasible.json")
    plan = evaluate(inst, ["cpu", "gpu", "gpu"])
    assert not plan.feasible
    assert plan.reason is not None and "exist" in plan.reason


def test_bad_assignments_are_rejected() -> None:
    with pytest.raises(InstanceError, match="has 2 entries"):
        evaluate(tiny(), ["cpu", "gpu"])
    with pytest.raises(InstanceError) as info:
        evaluate(tiny(), ["cpu", "tpu", "gpu"])
    assert info.value.field == "assignment[1]"


def test_objective_prefers_cheaper_then_faster() -> None:
    inst = tiny()
    cheap = evaluate(inst, ["cpu", "gpu", "gpu"])
    dear = evaluate(inst, ["gpu"] * 3)
    assert is_better(cheap, dear) and not is_better(dear, cheap)
    assert is_better(cheap, None)
    infeasible = evaluate(Instance.load(DATA / "infeasible.json"), ["cpu"] * 3)
    assert not is_better(infeasible, None)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_layers=st.integers(1, 12),
    n_resources=st.integers(2, 5),
    data=st.data(),
)
def test_evaluate_is_deterministic_and_consistent(
    seed: int, n_layers: int, n_resources: int, data: st.DataObject
) -> None:
    inst = random_instance(seed, n_layers, n_resources)
    assignment = data.draw(
        st.lists(st.sampled_from(inst.resource_names), min_size=n_layers, max_size=n_layers)
    )
    first = evaluate(inst, assignment)
    again = evaluate(inst, assignment, costs=ChainCosts(inst))
    assert first == again
    if first.feasible:
        price = {r.name: r.price_per_hour for r in inst.resources}
        assert first.cost_per_hour == pytest.approx(
            sum((s.units or 0) * price[s.resource] for s in first.stages)
        )
        assert first.throughput is not None
        assert first.throughput >= inst.throughput_target * (1 - 1e-9)
        assert math.isclose(first.throughput, min(s.throughput or 0 for s in first.stages))
        # minimal provisioning: one unit fewer on any stage misses target or memory
        costs = ChainCosts(inst)
        for s in first.stages:
            if (s.units or 0) > 1:
                shape = costs.shape(s.first, s.last, s.resource)
                k = (s.units or 0) - 1
                misses_target = shape.throughput(k, inst.batch_size) < inst.throughput_target
                too_big = shape.memory_gb(k) > inst.resource(s.resource).memory_gb
                assert misses_target or too_big
