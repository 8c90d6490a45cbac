"""Every baseline: valid plans priced by the cost model, never better than exact, seeded."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heterps_core.costmodel import costs_equal, evaluate, is_better
from heterps_core.errors import SchedulerError
from heterps_core.generate import random_instance
from heterps_core.instance import Instance
from heterps_core.schedulers import create, get, names

DATA = Path(__file__).parent / "data"
BASELINES = ["brute", "greedy", "genetic", "bayes", "random", "homogeneous", "heuristic"]
FAST_OPTIONS = {"generations": 15, "trials": 25, "samples": 300}


def test_registry_lists_every_scheduler() -> None:
    assert set(BASELINES) | {"exact"} <= set(names())
    for name in BASELINES:
        assert get(name).name == name and get(name).summary


def test_unknown_scheduler_is_a_clear_error() -> None:
    with pytest.raises(SchedulerError, match="unknown scheduler 'nope'; known: "):
        create("nope")


@pytest.mark.parametrize("name", BASELINES)
def test_plan_agrees_with_evaluate(name: str) -> None:
    inst = Instance.load(DATA / "caps.json")
    plan = create(name, seed=3, **FAST_OPTIONS).plan(inst)
    assert plan.scheduler == name and plan.solve_time_s > 0
    if plan.feasible:
        again = evaluate(inst, list(plan.assignment or ()))
        assert again.cost_per_hour == plan.cost_per_hour
        assert again.throughput == plan.throughput
    else:
        assert plan.reason


@pytest.mark.parametrize("name", ["genetic", "bayes", "random"])
def test_seed_makes_stochastic_schedulers_repeatable(name: str) -> None:
    inst = random_instance(5, 14, 4)
    plans = [create(name, seed=s, **FAST_OPTIONS).plan(inst) for s in (7, 7, 8)]
    assert plans[0].assignment == plans[1].assignment
    assert get(name).stochastic


def test_brute_refuses_beyond_two_million_assignments() -> None:
    inst = random_instance(0, 14, 3)  # 3^14 = 4.8 million
    assert get("brute").refusal(inst)
    with pytest.raises(SchedulerError, match="limit is 2,000,000"):
        create("brute").plan(inst)
    assert get("brute").refusal(random_instance(0, 13, 3)) is None  # 1.6 million


def test_homogeneous_is_the_best_single_resource_plan() -> None:
    inst = Instance.load(DATA / "tiny.json")
    plan = create("homogeneous").plan(inst)
    assert set(plan.assignment or ()) == {"cpu"} and plan.cost_per_hour == pytest.approx(4.2)
    assert not create("homogeneous").plan(Instance.load(DATA / "infeasible.json")).feasible


def test_heuristic_puts_sparse_on_cpu_and_dense_on_best_value_gpu() -> None:
    inst = random_instance(4, 16, 6)
    plan = create("heuristic").plan(inst)
    cpu_names = {r.name for r in inst.resources if r.kind == "cpu"}
    dense_on = {a for a, layer in zip(plan.assignment or (), inst.layers, strict=True)
                if not layer.is_sparse}
    for res, layer in zip(plan.assignment or (), inst.layers, strict=True):
        if layer.is_sparse:
            assert res in cpu_names
    assert len(dense_on) == 1 and not dense_on & cpu_names


def test_greedy_is_deterministic_and_feasible_on_tiny() -> None:
    inst = Instance.load(DATA / "tiny.json")
    first, second = create("greedy").plan(inst), create("greedy").plan(inst)
    assert first.assignment == second.assignment and first.feasible


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 100_000), n_layers=st.integers(1, 9), n_res=st.integers(2, 4),
       caps=st.booleans())
def test_exact_is_never_worse_than_any_scheduler(
    seed: int, n_layers: int, n_res: int, caps: bool
) -> None:
    inst = random_instance(seed, n_layers, n_res, caps=caps)
    exact = create("exact").plan(inst)
    for name in BASELINES:
        if get(name).refusal(inst):
            continue
        other = create(name, seed=seed, **FAST_OPTIONS).plan(inst)
        assert not is_better(other, exact), (name, other.to_dict(), exact.to_dict())
        if other.feasible:
            assert exact.feasible
            assert exact.cost_per_hour is not None and other.cost_per_hour is not None
            assert exact.cost_per_hour <= other.cost_per_hour or costs_equal(
                exact.cost_per_hour, other.cost_per_hour
            )
