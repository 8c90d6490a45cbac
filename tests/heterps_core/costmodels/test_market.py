"""Spot markets in the cost model (docs/cost-model.md "Spot markets"): a stage on spot costs
its units' spot price plus the expected share of paid time lost to interruptions at the
Young/Daly checkpoint interval; each stage takes the cheaper market; plans record it."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.market import CHECKPOINT_WRITE_GBPS
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.schedulers import create

DATA = Path(__file__).parents[1] / "schedulers" / "data"
GPU_SPOT = {"spot_price": 0.9, "interruptions_per_hour": 0.5, "restart_s": 120}


def tiny(name: str = "tiny.json", **markets: dict[str, float]) -> Instance:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    for res in data["resources"]:
        if res["name"] in markets:
            res["market"] = copy.deepcopy(markets[res["name"]])
    return Instance.from_dict(data)


def test_a_spot_stage_costs_its_price_plus_lost_work_and_restarts() -> None:
    plan = evaluate(tiny(gpu=GPU_SPOT), ["cpu", "gpu", "gpu"])
    cpu, gpu = plan.stages
    # fc1+fc2 on one gpu unit: 0.7 GB of state, written at the documented bandwidth
    delta = 0.7 / CHECKPOINT_WRITE_GBPS
    mtbi = 3600 / (1 * 0.5)
    tau = math.sqrt(2 * delta * mtbi)
    waste = delta / tau + tau / (2 * mtbi) + 120 / mtbi
    assert gpu.market == "spot" and cpu.market == "on-demand"
    assert plan.cost_per_hour == pytest.approx(0.6 + 0.9 * (1 + waste), rel=1e-12)
    assert gpu.checkpoint_every == round(tau / gpu.time_per_batch_s)
    assert cpu.checkpoint_every is None
    assert plan.hours is not None and plan.total_cost is not None
    assert plan.total_cost == pytest.approx(plan.cost_per_hour * plan.hours)
    assert plan.expected_interruptions == pytest.approx(0.5 * plan.hours)
    data = plan.to_dict()
    assert data["stages"][1]["market"] == "spot"
    assert data["stages"][0] == {**data["stages"][0], "market": "on-demand",
                                 "checkpoint_every": None}


def test_frequent_interruptions_keep_a_stage_on_demand() -> None:
    stormy = {"spot_price": 2.9, "interruptions_per_hour": 20, "restart_s": 600}
    plan = evaluate(tiny(gpu=stormy), ["cpu", "gpu", "gpu"])
    assert [s.market for s in plan.stages] == ["on-demand", "on-demand"]
    assert plan.cost_per_hour == pytest.approx(3.6)
    assert plan.expected_interruptions == 0


def test_more_units_on_spot_are_interrupted_more_often() -> None:
    """The stage's interruption rate is its units' sum: the all-cpu stage of 7 units pays
    more per unit for lost work than a single unit would."""
    cheap = {"spot_price": 0.2, "interruptions_per_hour": 1.0, "restart_s": 60}
    model = cost_model_for(tiny(cpu=cheap))
    one = model.unit_cost(1, 2, "cpu", 1)
    seven = model.unit_cost(1, 2, "cpu", 7)
    assert seven > 7 * one


def test_without_markets_plans_carry_no_market_fields() -> None:
    plan = evaluate(tiny(), ["cpu", "gpu", "gpu"])
    assert plan.expected_interruptions is None
    data = plan.to_dict()
    assert "expected_interruptions" not in data
    assert all("market" not in s and "checkpoint_every" not in s for s in data["stages"])


def test_exact_takes_spot_where_it_is_cheaper() -> None:
    plan = create("exact").plan(tiny(gpu=GPU_SPOT))
    assert plan.assignment == ("cpu", "gpu", "gpu")
    assert [s.market for s in plan.stages] == ["on-demand", "spot"]
    assert plan.cost_per_hour < 3.6


def test_v2_server_stays_on_demand_and_stages_record_markets() -> None:
    cpu_spot = {"spot_price": 0.2, "interruptions_per_hour": 0.2, "restart_s": 60}
    inst = tiny("tiny_v2.json", cpu=cpu_spot, gpu=GPU_SPOT)
    plan = create("exact").plan(inst)
    assert plan.feasible and plan.parameter_server is not None
    assert {s.market for s in plan.stages} <= {"spot", "on-demand"}
    assert all(s.market is not None for s in plan.stages)
    server = plan.parameter_server
    # the shards are priced on demand, whatever the host's spot offer
    assert server.cost_per_hour == pytest.approx(
        server.shards * inst.resource(server.resource).price_per_hour)
    again = evaluate(inst, list(plan.assignment or ()))
    assert again.cost_per_hour == pytest.approx(plan.cost_per_hour, rel=1e-9)


def test_a_plan_with_markets_round_trips_through_json() -> None:
    plan = evaluate(tiny(gpu=GPU_SPOT), ["cpu", "gpu", "gpu"])
    again = Plan.from_dict(json.loads(plan.to_json()))
    assert again.to_dict() == plan.to_dict()
    assert [s.market for s in again.stages] == ["on-demand", "spot"]
    assert again.stages[1].checkpoint_every == plan.stages[1].checkpoint_every


def test_the_waste_share_is_least_at_the_young_daly_interval() -> None:
    from heterps_core.costmodels.market import waste

    delta, mtbi, restart = 0.08, 40.0, 5.0
    tau = math.sqrt(2 * delta * mtbi)
    at_optimum = float(waste(delta, mtbi, restart))
    assert at_optimum == pytest.approx(math.sqrt(2 * delta / mtbi) + restart / mtbi)
    # The same figure with tau* given, and more at any other interval: at tau*/c and c tau*
    # the checkpoint-and-loss share is (c + 1/c) / 2 times its least.
    assert float(waste(delta, mtbi, restart, tau)) == pytest.approx(at_optimum)
    for c in (0.25, 0.5, 2.0, 4.0):
        share = float(waste(delta, mtbi, restart, c * tau)) - restart / mtbi
        assert share == pytest.approx((c + 1 / c) / 2 * math.sqrt(2 * delta / mtbi))
