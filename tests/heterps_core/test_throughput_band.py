"""A plan's throughput band: the same stages and units priced with every figure at the slow
and the fast end of its measured spread."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from heterps_core.cli import main
from heterps_core.costmodel import evaluate
from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.throughput_band import throughput_band

BATCH = 100


def _instance(spread: dict[str, float] | None, version: int = 1) -> Instance:
    layers: list[dict[str, Any]] = [
        {"name": name, "kind": "dense", "compute_s": {"a": seconds, "b": seconds * 2},
         "output_mb": 0.1, "sync_mb": 0.0, "memory_gb": 0.1, "shardable": False}
        for name, seconds in (("l0", 0.010), ("l1", 0.030))
    ]
    if spread is not None:
        for layer in layers:
            layer["compute_spread"] = dict(spread)
    return Instance.from_dict({
        "version": version, "batch_size": BATCH, "throughput_target": 1.0,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0, "count": 4,
                       "memory_gb": 64, "network_gbps": 10} for n in ("a", "b")],
        "layers": layers,
    })


def _moved(instance: Instance, factor: dict[str, float]) -> Instance:
    return instance.replace(layers=tuple(
        replace(layer, compute_s={r: s * factor.get(r, 1.0) for r, s in layer.compute_s.items()})
        for layer in instance.layers))


def test_one_stage_band_is_the_stage_time_at_both_ends() -> None:
    instance = _instance({"a": 0.05})
    plan = evaluate(instance, ["a", "a"])
    band = throughput_band(instance, plan)
    assert band is not None and plan.throughput == pytest.approx(BATCH / 0.040)
    assert band.low == pytest.approx(BATCH / (0.040 * 1.05))
    assert band.high == pytest.approx(BATCH / (0.040 * 0.95))
    assert band.minus == pytest.approx(1 - 1 / 1.05)
    assert "throughput band" in band.describe() and "-4.8% / +5.3%" in band.describe()


@pytest.mark.parametrize("sync", ["async", "bsp"])
def test_the_band_is_the_same_plan_priced_on_moved_figures(sync: str) -> None:
    instance = _instance({"a": 0.02, "b": 0.10}, version=2).as_v2(sync)
    plan = evaluate(instance, ["a", "b"])
    band = throughput_band(instance, plan)
    assert band is not None and plan.throughput is not None
    slow = evaluate(_moved(instance, {"a": 1.02, "b": 1.10}), ["a", "b"])
    fast = evaluate(_moved(instance, {"a": 0.98, "b": 0.90}), ["a", "b"])
    assert [s.units for s in slow.stages] == [s.units for s in plan.stages]  # one unit each
    assert band.low == pytest.approx(slow.throughput)
    assert band.high == pytest.approx(fast.throughput)
    assert band.low < plan.throughput < band.high


def test_no_band_without_spreads_on_the_figures_the_plan_uses() -> None:
    assert throughput_band(_instance(None), evaluate(_instance(None), ["a", "a"])) is None
    only_b = _instance({"b": 0.1})
    assert throughput_band(only_b, evaluate(only_b, ["a", "a"])) is None


def test_plan_and_evaluate_print_the_band(tmp_path, capsys) -> None:
    path = tmp_path / "instance.json"
    path.write_text(_instance({"a": 0.05}).to_json())
    assert main(["evaluate", str(path), "--assignment", "a,a", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["throughput_band"]["low"] == pytest.approx(BATCH / (0.040 * 1.05), rel=1e-6)
    assert main(["evaluate", str(path), "--assignment", "a,a"]) == 0
    assert "throughput band 2,381..2,632 samples/s" in capsys.readouterr().out
    assert main(["plan", str(path), "--json"]) == 0
    assert "throughput_band" in json.loads(capsys.readouterr().out)


def test_a_bad_spread_names_the_field_and_a_missing_one_is_fine() -> None:
    data = _instance({"a": 0.05}).to_dict()
    data["layers"][0]["compute_spread"] = {"a": -1}
    with pytest.raises(InstanceError, match=r"layers\[0\]\.compute_spread\.a"):
        Instance.from_dict(data)
    data["layers"][0]["compute_spread"] = [0.1]
    with pytest.raises(InstanceError, match="resource name -> fraction"):
        Instance.from_dict(data)
    del data["layers"][0]["compute_spread"]
    assert Instance.from_dict(data).layers[0].compute_spread == {}  # older files load


def test_a_plan_with_a_parameter_server_keeps_its_shards_in_the_band() -> None:
    from heterps_core.generate import with_parameter_server

    base = _instance({"a": 0.03, "b": 0.03}, version=2)
    data = base.to_dict()
    data["layers"][0].update(kind="embedding", shardable=True, sync_mb=0.0)
    data["layers"][1]["sync_mb"] = 0.5
    instance = with_parameter_server(Instance.from_dict(data), row_s=1e-6).as_v2("async")
    plan = evaluate(instance, ["a", "b"])
    assert plan.feasible and plan.parameter_server is not None
    band = throughput_band(instance, plan)
    slow = evaluate(_moved(instance, {"a": 1.03, "b": 1.03}), ["a", "b"])
    assert slow.parameter_server is not None  # the same shards where the plan put them
    assert (slow.parameter_server.resource, slow.parameter_server.shards) == (
        plan.parameter_server.resource, plan.parameter_server.shards)
    assert [s.units for s in slow.stages] == [s.units for s in plan.stages]
    assert band is not None and band.low == pytest.approx(slow.throughput)
    assert band.low < plan.throughput < band.high
