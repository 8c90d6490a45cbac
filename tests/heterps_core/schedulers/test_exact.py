"""`exact`: the spec's examples, equality with brute force, the ILP fallback, speed bars."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import heterps_core.schedulers.exact as exact_module
from heterps_core.costmodel import evaluate
from heterps_core.generate import random_instance
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.schedulers import create

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reproduces_expected_examples(name: str) -> None:
    want = EXPECTED[name]
    plan = create("exact").plan(Instance.load(DATA / name))
    assert plan.feasible == want["feasible"]
    if not plan.feasible:
        assert plan.reason and "fc1" in plan.reason  # names the layer nothing can hold
        return
    assert list(plan.assignment or ()) == want["assignment"]
    assert plan.cost_per_hour == pytest.approx(want["cost_per_hour"], rel=1e-9)
    assert plan.throughput == pytest.approx(want["throughput"], rel=1e-9)
    assert plan.total_cost == pytest.approx(want["total_cost"], rel=1e-6)
    got = [(list(s.layers), s.resource, s.units) for s in plan.stages]
    assert got == [(s["layers"], s["resource"], s["units"]) for s in want["stages"]]
    assert plan.scheduler == "exact" and plan.solve_time_s > 0


def same_optimum(a: Plan, b: Plan) -> bool:
    if a.feasible != b.feasible:
        return False
    if not a.feasible:
        return True
    assert a.cost_per_hour and b.cost_per_hour and a.throughput and b.throughput
    return (
        abs(a.cost_per_hour - b.cost_per_hour) <= 1e-9 * b.cost_per_hour
        and abs(a.throughput - b.throughput) <= 1e-9 * b.throughput
    )


def _small(seed: int) -> tuple[int, int]:
    return 2 + seed % 9, 2 + seed % 2  # L <= 10, 2-3 resources


@pytest.mark.slow
def test_equals_brute_on_200_random_instances() -> None:
    # The acceptance: L <= 10, 2-3 resources, half with binding caps.
    for seed in range(200):
        n_layers, n_res = _small(seed)
        inst = random_instance(1000 + seed, n_layers, n_res, caps=seed % 2 == 1)
        exact, brute = create("exact").plan(inst), create("brute").plan(inst)
        assert same_optimum(exact, brute), (seed, exact.to_dict(), brute.to_dict())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n_layers=st.integers(1, 7),
       n_res=st.integers(2, 3), caps=st.booleans())
def test_equals_brute_property(seed: int, n_layers: int, n_res: int, caps: bool) -> None:
    inst = random_instance(seed, n_layers, n_res, caps=caps)
    assert same_optimum(create("exact").plan(inst), create("brute").plan(inst))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n_layers=st.integers(2, 7), scale=st.floats(0.3, 3.0))
def test_equals_brute_with_any_target(seed: int, n_layers: int, scale: float) -> None:
    # Arbitrary targets include infeasible instances and memory-bound stages.
    base = random_instance(seed, n_layers, 3, caps=True)
    inst = base.with_target(base.throughput_target * scale)
    exact, brute = create("exact").plan(inst), create("brute").plan(inst)
    assert same_optimum(exact, brute)
    if not exact.feasible:
        assert exact.reason


def test_integer_programme_fallback_equals_brute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_module, "MAX_DP_WORK", -1)  # force the ILP on every capped case
    for seed in range(24):
        n_layers, n_res = _small(seed)
        inst = random_instance(500 + seed, n_layers, n_res, caps=True)
        assert same_optimum(create("exact").plan(inst), create("brute").plan(inst)), seed
    # the caps example needs the cross-stage caps
    inst = Instance.load(DATA / "caps.json")
    assert create("exact").plan(inst).cost_per_hour == pytest.approx(19.376, rel=1e-9)


def test_plan_is_what_evaluate_says() -> None:
    inst = random_instance(11, 40, 6, caps=True)
    plan = create("exact").plan(inst)
    again = evaluate(inst, list(plan.assignment or ()))
    assert again.feasible and again.cost_per_hour == plan.cost_per_hour


def test_progress_is_reported() -> None:
    seen = []
    create("exact").plan(random_instance(2, 10, 3, caps=True), seen.append)
    assert seen and seen[-1].message == "optimal"


@pytest.mark.parametrize(("caps", "bound_s"), [(False, 1.0), (True, 10.0)])
def test_speed_bar_64_layers_6_resources(caps: bool, bound_s: float) -> None:
    inst = random_instance(0, 64, 6, caps=caps)
    start = time.perf_counter()
    plan = create("exact").plan(inst)
    assert plan.feasible
    # generous factor-free check on a shared 2-core machine; the benchmark reports the numbers
    assert time.perf_counter() - start < bound_s
