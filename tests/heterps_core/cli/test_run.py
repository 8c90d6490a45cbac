"""`heterps run`: a real two-stage job from a plan file, and its error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heterps_core.cli import main
from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance

ROOT = Path(__file__).resolve().parents[3]


def write_plan(folder: Path) -> Path:
    names = ["cpu", "cpu-b"]
    instance = Instance.from_dict(
        {
            "version": 1,
            "batch_size": 64,
            "throughput_target": 100,
            "resources": [
                {
                    "name": n,
                    "kind": "cpu",
                    "price_per_hour": 1.0,
                    "count": 2,
                    "memory_gb": 8,
                    "network_gbps": 10,
                }
                for n in names
            ],
            "layers": [
                {
                    "name": f"l{i}",
                    "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: 0.01 for n in names},
                    "output_mb": 0.01,
                    "sync_mb": 0.0,
                    "memory_gb": 0.1,
                    "shardable": i == 0,
                }
                for i in range(4)
            ],
        }
    )
    path = folder / "plan.json"
    path.write_text(evaluate(instance, ["cpu", "cpu-b", "cpu-b", "cpu-b"]).to_json())
    return path


def heterps(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "heterps_core", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.slow
def test_run_trains_the_plan_and_prints_a_summary(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    done = heterps(
        "run",
        str(plan),
        "--model",
        "ctr_dnn",
        "--size",
        "tiny",
        "--steps",
        "12",
        "--batch-size",
        "32",
        "--bind",
        "cpu=cpu,cpu-b=cpu",
        "--json",
        "--checkpoint-dir",
        str(tmp_path / "ckpt"),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["steps"] == 12 and summary["checkpoint_step"] == 12
    assert summary["throughput"] > 0 and 0 < summary["loss"] < 2
    assert 0 < summary["flushed_throughput"] < summary["predicted_throughput"]  # two stages
    assert summary["cost"] > 0 and summary["cost_per_hour"] == pytest.approx(2.0)
    assert summary["binding"] == {"cpu": "cpu", "cpu-b": "cpu"}
    assert "step 12/12" in done.stderr  # the progress line's final state
    assert summary["optimizer"] == "adam"  # CTR models train with Adam unless told otherwise
    processes = {row["rank"]: row for row in summary["processes"]}
    assert sorted(processes) == [0, 1, 2]
    assert all(0.05e9 < processes[r]["peak_rss_bytes"] < 4e9 for r in (0, 1))
    # Stage 1 is the shard's only client, on its machine: it serves the shard (role kept).
    assert processes[2]["process"] == "parameter server shard 0 (rank 2, in rank 0's process)"
    assert processes[2]["role"] == "ps shard 0" and processes[2]["in_process"]
    assert "peak_rss_bytes" not in processes[2]
    assert 0 < processes[2]["rows_held"] <= 26 * 100  # rows touched, not the vocabulary


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--bind", "cpu=tpu"], "heterps run: error: bind.cpu: unknown target 'tpu'"),
        (["--bind", "gpu=cpu"], "heterps run: error: bind.gpu: the plan has no resource type"),
        (["--sync", "ssp"], "heterps run: error: sync: unknown sync mode 'ssp'"),
        (["--resume"], "heterps run: error: resume: needs a checkpoint directory"),
        (["--optimizer", "lamb"], "heterps run: error: optimizer: must be one of"),
        (["--sparse-optimizer", "adam:lr=x"],
         "heterps run: error: sparse_optimizer: lr must be a number, got 'x'"),
        (["--table-optimizer", "0"], "heterps run: error: table-optimizer: must be TABLE=SETTING"),
        (["--table-optimizer", "5=sgd"], "heterps run: error: table_optimizers: the model has"),
    ],
)
def test_bad_arguments_get_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    plan = write_plan(tmp_path)
    code = main(["run", str(plan), "--model", "ctr_dnn", "--size", "tiny", "--steps", "4", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(message), err
    assert "Traceback" not in err
    # The job processes' template started early is closed with the refusal: a caller that
    # runs the command in-process (a test, a notebook) is left with no child running.
    assert _template_children() == []


def _template_children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if stat[1] == me and stat[0] != "Z" and b"template_process" in command:
            found.append(int(entry.name))
    return found


def test_a_missing_plan_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(tmp_path / "nope.json"), "--model", "ctr_dnn", "--steps", "4"])
    assert code == 2
    assert "nope.json: cannot read file" in capsys.readouterr().err
