"""What `heterps run` trains when neither the plan nor a flag names the sync mode or the
micro-batches (docs/runtime.md, Defaults; measured in docs/benchmarks/speed.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from heterps_core.cli.run import RunCommand
from heterps_core.cli.run_config import run_config
from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from tests.heterps_core.cli.test_run import write_plan
from tests.heterps_core.cli.test_run_v2 import DATA


def config_for(plan: Path, *flags: str) -> tuple[str, int]:
    parser = argparse.ArgumentParser()
    RunCommand.add_arguments(parser)
    args = parser.parse_args([str(plan), "--model", "ctr_dnn", "--size", "tiny", "--steps", "4",
                              *flags])
    train = run_config(args).train
    return train.sync, train.micro_batches


@pytest.mark.parametrize(("flags", "shape"), [
    ((), ("async", 1)),  # as the v1 model priced it, the fastest shape measured
    (("--sync", "bsp"), ("bsp", 4)),  # exact: the flushed pipeline filled with micro-batches
    (("--micro-batches", "2"), ("async", 2)),
    (("--sync", "bsp", "--micro-batches", "1"), ("bsp", 1)),
])
def test_a_v1_plan_runs_async_unless_told(tmp_path: Path, flags: tuple[str, ...],
                                          shape: tuple[str, int]) -> None:
    assert config_for(write_plan(tmp_path), *flags) == shape


def test_a_one_stage_v1_plan_has_one_micro_batch_in_either_mode(tmp_path: Path) -> None:
    plan = plan_on_one_type(tmp_path)
    assert config_for(plan) == ("async", 1)
    assert config_for(plan, "--sync", "bsp") == ("bsp", 1)


def plan_on_one_type(folder: Path) -> Path:
    path = folder / "one-stage.json"
    path.write_text(evaluate(Instance.from_dict(_instance()), ["cpu"] * 4).to_json())
    return path


def _instance() -> dict[str, object]:
    return {
        "version": 1, "batch_size": 64, "throughput_target": 100,
        "resources": [{"name": "cpu", "kind": "cpu", "price_per_hour": 1.0, "count": 2,
                       "memory_gb": 8, "network_gbps": 10}],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {"cpu": 0.01}, "output_mb": 0.01, "sync_mb": 0.0,
                    "memory_gb": 0.1, "shardable": i == 0} for i in range(4)],
    }


def test_a_v2_plan_runs_its_own_shape(tmp_path: Path) -> None:
    for sync, micro in (("bsp", 2), ("async", 4)):
        instance = Instance.load(DATA / "tiny_v2.json").replace(sync=sync, micro_batches=micro)
        plan = tmp_path / f"{sync}.json"
        plan.write_text(evaluate(instance, ["cpu", "gpu", "gpu"]).to_json())
        assert config_for(plan) == (sync, micro)
