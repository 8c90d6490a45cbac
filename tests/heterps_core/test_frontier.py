"""The frontier: each point is the exact optimum at its target, fast enough to draw live."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from heterps_core.errors import InstanceError
from heterps_core.frontier import default_targets, frontier, frontier_to_dict
from heterps_core.generate import random_instance
from heterps_core.instance import Instance
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).parent / "schedulers" / "data"


def test_points_are_exact_optima_and_cost_grows_with_target() -> None:
    inst = random_instance(2, 12, 4, caps=True)
    points = frontier(inst, default_targets(inst, 8))
    assert [p.target for p in points] == sorted(p.target for p in points)
    last_cost = 0.0
    for point in points:
        direct = exact_plan(inst.with_target(point.target))
        assert point.plan.feasible == direct.feasible
        if direct.feasible:
            assert point.plan.cost_per_hour == direct.cost_per_hour
            assert point.plan.throughput is not None
            assert point.plan.throughput >= point.target * (1 - 1e-9)
            # a higher target only removes plans, so the cheapest cannot get cheaper
            assert point.plan.cost_per_hour is not None
            assert point.plan.cost_per_hour >= last_cost * (1 - 1e-9)
            last_cost = point.plan.cost_per_hour


def test_tiny_frontier_has_known_points() -> None:
    inst = Instance.load(DATA / "tiny.json")
    points = frontier(inst, [50000, 10000])
    assert [p.target for p in points] == [10000, 50000]
    assert points[1].plan.cost_per_hour == pytest.approx(3.6)
    data = frontier_to_dict(inst, points)
    assert data["points"][1]["cost_per_million_samples"] == pytest.approx(
        3.6 / (points[1].plan.throughput * 3600) * 1e6
    )


def test_dominated_points_are_marked() -> None:
    inst = Instance.load(DATA / "tiny.json")
    # 40,000 and 60,000 both get the 85,734 samples/s plan at $3.60: neither dominates
    # the other, but a dearer plan for a lower target would be dominated.
    points = frontier(inst, [40000, 60000])
    assert not any(p.dominated for p in points)
    for p in frontier(inst, default_targets(inst, 12)):
        if p.dominated:
            assert any(
                q.plan.feasible and (q.plan.throughput or 0) >= (p.plan.throughput or 0)
                and (q.plan.cost_per_hour or 0) < (p.plan.cost_per_hour or 0)
                for q in frontier(inst, default_targets(inst, 12))
            )


def test_infeasible_targets_are_points_with_reasons() -> None:
    inst = Instance.load(DATA / "tiny.json")
    (point,) = frontier(inst, [1e9])
    assert not point.plan.feasible and point.plan.reason


def test_twenty_targets_on_32_layers_under_two_seconds() -> None:
    inst = random_instance(5, 32, 6)
    exact_plan(inst)  # warm imports
    start = time.perf_counter()
    points = frontier(inst)
    assert len(points) == 20
    assert time.perf_counter() - start < 2.0


def test_bad_targets() -> None:
    inst = Instance.load(DATA / "tiny.json")
    with pytest.raises(InstanceError) as info:
        frontier(inst, [1000, -5])
    assert info.value.field == "targets[1]"
    with pytest.raises(InstanceError, match="points"):
        default_targets(inst, 0)
    with pytest.raises(InstanceError, match="low <= high"):
        default_targets(inst, 5, 100, 10)
