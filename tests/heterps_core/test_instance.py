"""The instance model: JSON round trip and one test per validation rule of the spec §1."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance

DATA = Path(__file__).parent / "schedulers" / "data"


def tiny() -> dict[str, Any]:
    return json.loads((DATA / "tiny.json").read_text())


def test_load_reads_every_field() -> None:
    inst = Instance.load(DATA / "tiny.json")
    assert inst.name == "tiny-ctr"
    assert (inst.batch_size, inst.throughput_target, inst.samples, inst.input_mb) == (
        1000, 50000, 1e9, 2.0
    )
    assert inst.resource_names == ["cpu", "gpu"]
    assert inst.resource("gpu").bandwidth_bytes_per_s == 25e9 / 8
    assert [layer.name for layer in inst.layers] == ["embedding", "fc1", "fc2"]
    assert inst.layers[0].shardable and inst.layers[0].is_sparse
    assert inst.layers[1].compute_s == {"cpu": 0.08, "gpu": 0.004}


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    inst = Instance.load(DATA / "caps.json")
    inst.save(tmp_path / "copy.json")
    again = Instance.load(tmp_path / "copy.json")
    assert again.to_dict() == inst.to_dict()
    assert again == inst


def _mutate(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(tiny())
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()

BAD_INPUT = [
    # (where, new value, field named in the error, words in the problem)
    (("version",), 3, "version", "must be 1 or 2"),
    (("version",), _DELETE, "version", "missing"),
    (("batch_size",), 0, "batch_size", "greater than 0"),
    (("batch_size",), 10.5, "batch_size", "whole number"),
    (("batch_size",), True, "batch_size", "must be a number"),
    (("throughput_target",), -1, "throughput_target", "greater than 0"),
    (("throughput_target",), "fast", "throughput_target", "must be a number"),
    (("samples",), 0, "samples", "greater than 0"),
    (("input_mb",), -0.5, "input_mb", "must not be negative"),
    (("surprise",), 1, "surprise", "unknown field"),
    (("name",), 5, "name", "must be a string"),
    (("resources",), [], "resources", "non-empty list"),
    (("layers",), [], "layers", "non-empty list"),
    (("resources", 0, "price_per_hour"), 0, "resources[0].price_per_hour", "greater than 0"),
    (("resources", 0, "count"), -2, "resources[0].count", "greater than 0"),
    (("resources", 1, "count"), 1.5, "resources[1].count", "whole number"),
    (("resources", 0, "memory_gb"), 0, "resources[0].memory_gb", "greater than 0"),
    (("resources", 1, "network_gbps"), -25, "resources[1].network_gbps", "greater than 0"),
    (("resources", 1, "name"), "cpu", "resources[1].name", "duplicate"),
    (("resources", 0, "name"), "", "resources[0].name", "non-empty string"),
    (("resources", 0, "gpus"), 3, "resources[0].gpus", "unknown field"),
    (("resources", 0, "kind"), _DELETE, "resources[0].kind", "missing"),
    (("resources", 0), "cpu", "resources[0]", "JSON object"),
    (("layers", 2, "name"), "fc1", "layers[2].name", "duplicate"),
    (("layers", 1, "compute_s"), {"cpu": 0.1, "tpu": 0.01}, "layers[1].compute_s.tpu",
     "names no resource"),
    (("layers", 1, "compute_s"), {}, "layers[1].compute_s", "non-empty object"),
    (("layers", 1, "compute_s"), {"cpu": 0.0}, "layers[1].compute_s.cpu", "greater than 0"),
    (("layers", 0, "output_mb"), -1, "layers[0].output_mb", "must not be negative"),
    (("layers", 0, "sync_mb"), -1, "layers[0].sync_mb", "must not be negative"),
    (("layers", 0, "memory_gb"), -3, "layers[0].memory_gb", "must not be negative"),
    (("layers", 0, "shardable"), "yes", "layers[0].shardable", "true or false"),
    (("layers", 0, "shardable"), _DELETE, "layers[0].shardable", "missing"),
    (("layers", 0, "extra"), 1, "layers[0].extra", "unknown field"),
]


@pytest.mark.parametrize(("path", "value", "field", "words"), BAD_INPUT)
def test_bad_input_names_field_and_problem(
    path: tuple[Any, ...], value: Any, field: str, words: str
) -> None:
    with pytest.raises(InstanceError) as info:
        Instance.from_dict(_mutate(path, value))
    assert info.value.field == field
    assert words in info.value.problem


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected(constant: str) -> None:
    text = (DATA / "tiny.json").read_text().replace('"throughput_target": 50000',
                                                    f'"throughput_target": {constant}')
    with pytest.raises(InstanceError, match="finite"):
        Instance.from_json(text)


def test_float_infinity_in_a_dict_is_rejected() -> None:
    with pytest.raises(InstanceError) as info:
        Instance.from_dict(_mutate(("resources", 0, "price_per_hour"), float("inf")))
    assert info.value.field == "resources[0].price_per_hour"
    assert "finite" in info.value.problem


def test_not_json_and_not_an_object() -> None:
    with pytest.raises(InstanceError, match="not valid JSON"):
        Instance.from_json("{ nope")
    with pytest.raises(InstanceError, match="JSON object"):
        Instance.from_json("[1, 2]")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match="cannot read file"):
        Instance.load(tmp_path / "absent.json")


def test_with_resource_validates_the_change() -> None:
    inst = Instance.load(DATA / "tiny.json")
    assert inst.with_resource("gpu", price_per_hour=1.5).resource("gpu").price_per_hour == 1.5
    with pytest.raises(InstanceError) as info:
        inst.with_resource("gpu", count=0)
    assert info.value.field == "resources[1].count"
    with pytest.raises(InstanceError, match="no resource named"):
        inst.with_resource("tpu", count=3)
