"""`heterps run` on a plan with spot stages (issue 26.2): it checkpoints at the interval the
plan priced unless `--checkpoint-every` says otherwise, and both summaries say which interval
ran and where it came from. Real runs of the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.runtime import checkpoint

ROOT = Path(__file__).resolve().parents[3]
NAMES = ["cpu", "cpu-b"]


def write_instance(folder: Path) -> Path:
    """Two CPU types and the tiny CTR-DNN's four layers: a stage of them needs one unit."""
    path = folder / "instance.json"
    path.write_text(json.dumps({
        "version": 1, "batch_size": 64, "throughput_target": 100,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0, "count": 2,
                       "memory_gb": 8, "network_gbps": 10} for n in NAMES],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: 0.01 for n in NAMES}, "output_mb": 0.01, "sync_mb": 0.0,
                    "memory_gb": 0.1, "shardable": i == 0} for i in range(4)],
    }))
    return path


def write_plan(folder: Path, spot_every: int | None) -> Path:
    """A two-stage plan (one unit each); with `spot_every`, stage 2 on spot with that
    interval and stage 1 on demand, as the planner writes a plan of an instance with markets."""
    instance = Instance.load(str(write_instance(folder)))
    data = json.loads(evaluate(instance, ["cpu", "cpu-b", "cpu-b", "cpu-b"]).to_json())
    assert [s["units"] for s in data["stages"]] == [1, 1]
    if spot_every is not None:
        data["stages"][0].update(market="on-demand", checkpoint_every=None)
        data["stages"][1].update(market="spot", checkpoint_every=spot_every)
    path = folder / "plan.json"
    path.write_text(json.dumps(data))
    return path


def run(plan: Path, steps: int, *extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "heterps_core", "run", str(plan), "--model", "ctr_dnn",
         "--size", "tiny", "--steps", str(steps), "--batch-size", "32", *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_the_plans_spot_interval_runs_and_the_json_says_so(tmp_path: Path) -> None:
    done = run(write_plan(tmp_path, 3), 7, "--checkpoint-dir", str(tmp_path / "ckpt"), "--json")
    summary = json.loads(done.stdout)
    assert summary["checkpoint_every"] == 3
    assert summary["checkpoint_every_from"] == "the plan's spot stages"
    assert summary["checkpoints_sealed"] == [3, 6, 7]  # every 3 steps, and the final one
    assert summary["checkpoint_step"] == 7
    # The directory keeps the newest two, sealed with the parts of both stages and the shard.
    assert checkpoint.complete_steps(str(tmp_path / "ckpt"), len(summary["processes"])) == [6, 7]


@pytest.mark.slow
def test_a_plan_the_planner_wrote_for_a_spot_market_runs_at_its_interval(tmp_path: Path) -> None:
    instance = json.loads(write_instance(tmp_path).read_text())
    instance["resources"][1]["market"] = {"spot_price": 0.3, "interruptions_per_hour": 2,
                                          "restart_s": 60}
    (tmp_path / "spot.json").write_text(json.dumps(instance))
    planned = subprocess.run(
        [sys.executable, "-m", "heterps_core", "plan", str(tmp_path / "spot.json"), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert planned.returncode == 0, planned.stderr
    plan = tmp_path / "planned.json"
    plan.write_text(planned.stdout)
    priced = [s["checkpoint_every"] for s in json.loads(planned.stdout)["stages"]
              if s.get("market") == "spot"]
    assert priced and all(isinstance(every, int) and every > 6 for every in priced)
    done = run(plan, 6, "--checkpoint-dir", str(tmp_path / "ckpt"))
    # Far longer than the run: only the final checkpoint falls inside it.
    assert (f"checkpoints every {min(priced):,} steps (from the plan's spot stages); "
            "sealed at step 6") in done.stdout.splitlines(), done.stdout


@pytest.mark.slow
def test_checkpoint_every_wins_and_the_text_says_where_it_came_from(tmp_path: Path) -> None:
    done = run(write_plan(tmp_path, 3), 7, "--checkpoint-dir", str(tmp_path / "ckpt"),
               "--checkpoint-every", "2")
    assert "checkpoints every 2 steps (from --checkpoint-every); sealed at steps 2, 4, 6, 7" in (
        done.stdout.splitlines()), done.stdout


@pytest.mark.slow
def test_a_plan_without_markets_runs_as_before(tmp_path: Path) -> None:
    done = run(write_plan(tmp_path, None), 7, "--checkpoint-dir", str(tmp_path / "ckpt"))
    lines = done.stdout.splitlines()
    assert f"checkpoint at step 7 in {tmp_path / 'ckpt'}" in lines
    assert not any(line.startswith("checkpoints every") for line in lines), lines
    assert "warning" not in done.stderr
    summary = json.loads(run(write_plan(tmp_path, None), 7, "--checkpoint-dir",
                             str(tmp_path / "again"), "--json").stdout)
    assert summary["checkpoint_every"] is None and summary["checkpoint_every_from"] is None
    assert summary["checkpoints_sealed"] == [7]


@pytest.mark.slow
def test_a_spot_plan_without_a_checkpoint_directory_is_warned_about(tmp_path: Path) -> None:
    done = run(write_plan(tmp_path, 3), 2)
    assert ("heterps run: warning: the plan's spot stages checkpoint every 3 steps, but "
            "without --checkpoint-dir nothing is checkpointed") in done.stderr
    assert not any(line.startswith("checkpoints every") for line in done.stdout.splitlines())


def test_a_bad_interval_in_the_plan_gets_one_clear_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, 3)
    data = json.loads(plan.read_text())
    data["stages"][1]["checkpoint_every"] = 0
    plan.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "heterps_core", "run", str(plan), "--model", "ctr_dnn",
         "--size", "tiny", "--steps", "7", "--checkpoint-dir", str(tmp_path / "ckpt")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "heterps run: error: plan.stages[1].checkpoint_every: must be a positive whole number "
        "of steps, got 0"), done.stderr
    assert "Traceback" not in done.stderr
