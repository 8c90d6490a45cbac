"""Cost model v2: the worked example of docs/cost-model.md, the format, v1 untouched."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).parents[1] / "schedulers" / "data"


def tiny_v2(**changes: Any) -> Instance:
    return Instance.load(DATA / "tiny_v2.json").replace(**changes)


def test_worked_example_bsp() -> None:
    plan = evaluate(tiny_v2(), ["cpu", "gpu", "gpu"])
    assert plan.feasible and plan.cost_model == 2
    assert [s.time_per_batch_s for s in plan.stages] == pytest.approx([0.012952, 0.007024])
    assert plan.throughput == pytest.approx(50_060.07, rel=1e-6)
    assert plan.cost_per_hour == pytest.approx(4.2)
    server = plan.parameter_server
    assert server is not None and server.resource == "cpu" and server.shards == 1
    assert server.time_per_batch_s == pytest.approx(0.001288)
    four = evaluate(tiny_v2(micro_batches=4), ["cpu", "gpu", "gpu"])
    assert four.throughput == pytest.approx(67_990.21, rel=1e-6)


def test_worked_example_async_and_optimum() -> None:
    plan = evaluate(tiny_v2(sync="async"), ["cpu", "gpu", "gpu"])
    assert plan.throughput == pytest.approx(88_589.65, rel=1e-6)
    assert [s.runs_ahead for s in plan.stages] == [True, False]
    for sync in ("async", "bsp"):
        best = exact_plan(tiny_v2(sync=sync))
        assert best.assignment == ("gpu", "gpu", "gpu")
        assert best.cost_per_hour == pytest.approx(3.6)
        assert best.throughput == pytest.approx(71_797.82, rel=1e-6)


def test_turns_need_more_units_than_the_overlapped_pipeline() -> None:
    """A target the bsp cycle misses with one unit each: units are chosen together."""
    inst = tiny_v2(throughput_target=60_000.0)
    plan = evaluate(inst, ["cpu", "gpu", "gpu"])
    assert plan.feasible and plan.throughput is not None and plan.throughput >= 60_000
    assert sum(s.units or 0 for s in plan.stages) == 3  # one stage got a second unit


def test_v2_round_trip_and_plan_json() -> None:
    inst = tiny_v2()
    assert Instance.from_json(inst.to_json()) == inst
    plan = exact_plan(inst)
    again = Plan.from_dict(json.loads(plan.to_json()))
    assert plan.parameter_server is not None and again.parameter_server is not None
    assert again.parameter_server.shards == plan.parameter_server.shards
    assert again.parameter_server.resource == plan.parameter_server.resource
    assert again.sync == "bsp" and again.micro_batches == 1 and again.cost_model == 2


def test_v1_files_keep_v1_plans() -> None:
    v1 = Instance.load(DATA / "tiny.json")
    plan = exact_plan(v1).to_dict()
    assert "sync" not in plan and "cost_model" not in plan
    assert v1.to_dict()["version"] == 1 and "sparse_pull_mb" not in v1.to_dict()["layers"][0]


@pytest.mark.parametrize(("path", "value", "field"), [
    (("sync",), "ssp", "sync"),
    (("micro_batches",), 0, "micro_batches"),
    (("parameter_server", "hosts"), ["tpu"], "parameter_server.hosts[0]"),
    (("parameter_server", "hosts"), [], "parameter_server.hosts"),
    (("parameter_server", "row_s"), {"cpu": -1}, "parameter_server.row_s.cpu"),
    (("layers", 0, "sparse_pull_mb"), -1, "layers[0].sparse_pull_mb"),
])
def test_bad_v2_fields_are_named(path: tuple[Any, ...], value: Any, field: str) -> None:
    data = json.loads((DATA / "tiny_v2.json").read_text())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = copy.deepcopy(value)
    with pytest.raises(InstanceError) as info:
        Instance.from_dict(data)
    assert info.value.field == field


def test_v2_fields_are_rejected_in_v1_files() -> None:
    data = json.loads((DATA / "tiny.json").read_text())
    data["sync"] = "bsp"
    with pytest.raises(InstanceError, match="unknown field"):
        Instance.from_dict(data)


def test_a_sparse_stage_waits_for_its_rows_at_every_unit_count() -> None:
    """Stages hold no table: one unit pulls too, and the server's row work splits over its
    shards (docs/cost-model.md, the row wait)."""
    from heterps_core.costmodels.v2.server import place_server, server_need
    from heterps_core.costmodels.v2.terms import StageTerms

    inst = tiny_v2()
    need = server_need(inst)
    assert need is not None
    one, _ = place_server(inst, "cpu", need)
    assert one is not None and one.shards == 1
    two = one.__class__(**{**one.__dict__, "shards": 2})
    bw = inst.resource("cpu").bandwidth_bytes_per_s
    traffic = 2.4e6 / bw
    rows = 26_000 * 2e-8
    no_server = StageTerms(inst).row_wait(0, 0, bw)
    assert no_server == pytest.approx(traffic)  # the relaxation bounds use: no row work
    assert StageTerms(inst, server=one).row_wait(0, 0, bw) == pytest.approx(traffic + rows)
    assert StageTerms(inst, server=two).row_wait(0, 0, bw) == pytest.approx(traffic + rows / 2)
    times = StageTerms(inst, server=one).times(0, 0, "cpu")
    without = StageTerms(inst.replace(parameter_server=None)).times(0, 0, "cpu")
    assert times[0] - without[0] == pytest.approx(traffic + rows)  # k = 1 waits as well
    assert StageTerms(inst, server=one).row_wait(1, 2, bw) == 0.0  # dense layers pull nothing
