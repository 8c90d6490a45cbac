"""`CostModel.evaluate_with_shards`: an assignment priced with the parameter server fixed at
a shard count (what `heterps run --ps-shards N --reevaluate` runs), on tiny_v2's numbers
(docs/cost-model.md, "Worked example")."""

from __future__ import annotations

from pathlib import Path

import pytest

from heterps_core.costmodels import cost_model_for
from heterps_core.instance import Instance

DATA = Path(__file__).resolve().parents[1] / "schedulers" / "data"
ALL_GPU = ["gpu", "gpu", "gpu"]


@pytest.fixture
def tiny_v2() -> Instance:
    return Instance.load(DATA / "tiny_v2.json")


def test_the_shards_the_model_picks_price_the_same(tiny_v2: Instance) -> None:
    model = cost_model_for(tiny_v2)
    free = model.evaluate(ALL_GPU)
    assert free.parameter_server is not None and free.parameter_server.shards == 1
    assert model.evaluate_with_shards(ALL_GPU, "cpu", 1) == free


def test_two_shards_halve_the_row_wait_and_cost_one_more_unit(tiny_v2: Instance) -> None:
    plan = cost_model_for(tiny_v2).evaluate_with_shards(ALL_GPU, "cpu", 2)
    assert plan.feasible, plan.reason
    server = plan.parameter_server
    assert server is not None and (server.resource, server.shards) == ("cpu", 2)
    # One shard: 2.4e6 / 3.125e9 + 26000 x 2e-8 = 0.001288 s per mini-batch; two split it.
    assert server.time_per_batch_s == pytest.approx(0.001288 / 2)
    assert server.cost_per_hour == pytest.approx(1.2) and server.memory_gb == pytest.approx(50)
    # The stage waits for its rows: bytes at the stage's bandwidth, rows at row_s / 2.
    wait = 2.4e6 / 3.125e9 + 26000 * 2e-8 / 2
    assert plan.stages[0].time_per_batch_s == pytest.approx(0.00064 + 0.012 + wait)
    assert plan.throughput == pytest.approx(1000 / (0.00064 + 0.012 + wait))
    assert plan.cost_per_hour == pytest.approx(3.0 + 1.2)


@pytest.mark.parametrize(("resource", "shards", "reason"), [
    ("cpu", 65, "65 shards of cpu asked for, 64 units exist"),
    ("gpu", 1, "'gpu' may not host the parameter server (hosts: cpu)"),
    ("cpu", 0, "the parameter server needs at least 1 shard, got 0"),
])
def test_shards_that_cannot_serve_are_infeasible_with_the_reason(
    tiny_v2: Instance, resource: str, shards: int, reason: str
) -> None:
    plan = cost_model_for(tiny_v2).evaluate_with_shards(ALL_GPU, resource, shards)
    assert not plan.feasible and plan.reason == reason


def test_too_few_shards_for_the_tables_are_infeasible(tiny_v2: Instance) -> None:
    small = tiny_v2.with_resource("cpu", memory_gb=40)  # 100 GB of tables: 3 shards
    plan = cost_model_for(small).evaluate_with_shards(ALL_GPU, "cpu", 2)
    assert not plan.feasible
    assert plan.reason == "2 shard(s) of cpu cannot hold the tables: 100 GB needs 3 of 40 GB"
    assert cost_model_for(small).evaluate_with_shards(ALL_GPU, "cpu", 3).feasible


def test_a_model_without_a_server_role_has_nothing_to_fix() -> None:
    v1 = Instance.load(DATA / "tiny.json")
    plan = cost_model_for(v1).evaluate_with_shards(["cpu", "gpu", "gpu"], "cpu", 2)
    assert not plan.feasible
    assert plan.reason == "the instance has no parameter-server role (its tables stay with " \
                          "their stage)"
