"""Issue 12 item 4: every numeric input has a documented range (heterps_core.limits),
enforced by the core's validators that forms, the API and the CLI all go through."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.limits import LIMITS, check

TINY = json.loads((Path(__file__).resolve().parents[2]
                   / "webapp/catalogue/demo/tiny-ctr.json").read_text())


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(TINY)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(("path", "value", "field"), [
    (["batch_size"], 10**9, "batch_size"),
    (["throughput_target"], 1e308, "throughput_target"),
    (["samples"], 1e300, "samples"),
    (["resources", 0, "count"], 10**9, "resources[0].count"),
    (["resources", 0, "price_per_hour"], 1e12, "resources[0].price_per_hour"),
    (["resources", 0, "memory_gb"], 1e300, "resources[0].memory_gb"),
])
def test_absurd_instance_numbers_are_refused_naming_the_field(
    path: list[Any], value: Any, field: str
) -> None:
    with pytest.raises(InstanceError) as caught:
        Instance.from_dict(_with(path, value))
    assert caught.value.field == field
    assert "must be" in caught.value.problem


def test_the_tiny_instance_is_within_every_range() -> None:
    Instance.from_dict(TINY)


def test_a_thread_budget_of_100000_is_refused() -> None:
    from heterps_core.runtime.binding import parse_target
    from heterps_core.runtime.errors import RunConfigError

    assert parse_target("cpu:8").threads == 8
    with pytest.raises(RunConfigError) as caught:
        parse_target("cpu:100000", "bind.cpu")
    assert caught.value.field == "bind.cpu" and "1,024" in caught.value.problem


def test_a_million_data_parallel_workers_are_refused() -> None:
    from heterps_core.dataparallel.config import TrainConfig
    from heterps_core.dataparallel.errors import DataParallelError

    with pytest.raises(DataParallelError) as caught:
        TrainConfig(workers=10**6, max_steps=1)
    assert caught.value.field == "workers"


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_every_limit_refuses_nan_infinity_and_past_its_bounds(name: str) -> None:
    limit = LIMITS[name]
    assert check(name, limit.high) == limit.high
    for bad in (float("nan"), float("inf"), limit.high * 2 + 1, "1", True):
        with pytest.raises(InstanceError):
            check(name, bad)


def test_the_documented_table_lists_every_limit() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs/limits.md").read_text()
    missing = [name for name in LIMITS if f"`{name}`" not in doc]
    assert missing == []


@pytest.mark.parametrize(("argv", "words"), [
    (["run", "plan.json", "--model", "ctr_dnn", "--steps", "10000000000"],
     "--steps: must be between 1 and 10,000,000"),
    (["run", "plan.json", "--model", "ctr_dnn", "--steps", "5", "--lr", "nan"],
     "--lr: must be finite"),
    (["train-dp", "--workers", "1000000"], "--workers: must be between 1 and 256"),
    (["train-dp", "--batch-size", "1000000000"], "--batch-size: must be between 1 and 65,536"),
])
def test_the_cli_refuses_out_of_range_arguments(argv: list[str], words: str,
                                                capsys: Any) -> None:
    from heterps_core.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert words in capsys.readouterr().err
