"""Issue 23 item 5, on real processes: `heterps plan`/`evaluate` place the parameter server
of a zoo model with sparse tables, and `heterps run --ps-shards` uses it (as priced, or
re-priced with `--reevaluate`), its `--json` naming every process's resource and binding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
MODEL = ["--model", "ctr_dnn", "--size", "tiny", "--batch-size", "64"]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m heterps_core ARGS` as a user runs it: its own process, its own children."""
    return subprocess.run([sys.executable, "-m", "heterps_core", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """(instance, plan, the plan's JSON) of ctr_dnn tiny profiled on the default catalogue."""
    folder = tmp_path_factory.mktemp("ps-shards")
    instance, plan = folder / "instance.json", folder / "plan.json"
    done = cli("profile", "ctr_dnn", "--size", "tiny", "--batch-size", "64", "--threads", "1",
               "--warmup", "1", "--repeats", "2", "--force", "--target", "200",
               "--out", str(instance))
    assert done.returncode == 0, done.stderr
    done = cli("plan", str(instance), "--json")
    assert done.returncode == 0, done.stderr
    plan.write_text(done.stdout)
    return instance, plan, json.loads(done.stdout)


def test_plan_and_evaluate_place_the_server_of_a_model_with_sparse_tables(
    profiled: tuple[Path, Path, dict[str, Any]],
) -> None:
    instance_path, _, plan = profiled
    instance = json.loads(instance_path.read_text())
    server = plan.get("parameter_server")
    assert server is not None, plan
    kinds = {r["name"]: r for r in instance["resources"]}
    assert kinds[server["resource"]]["kind"] == "cpu" and server["shards"] >= 1
    # Its cost is in the plan's: the stages' units plus the shards.
    stages = sum(s["units"] * kinds[s["resource"]]["price_per_hour"] for s in plan["stages"])
    assert plan["cost_per_hour"] == pytest.approx(stages + server["cost_per_hour"])
    assert server["cost_per_hour"] == pytest.approx(
        server["shards"] * kinds[server["resource"]]["price_per_hour"])
    assert server["throughput"] >= instance["throughput_target"]
    # The embedding's rows travel to and from the server; dense layers have none.
    assert instance["layers"][0]["sparse_pull_mb"] > 0
    assert all(layer["sparse_pull_mb"] == 0 for layer in instance["layers"][1:])
    done = cli("evaluate", str(instance_path), "--json",
               "--assignment", ",".join(plan["assignment"]))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parameter_server"] == server


def test_run_with_the_plans_shards_lists_every_process_resource_and_binding(
    profiled: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, plan_path, plan = profiled
    server = plan["parameter_server"]
    assert server is not None and server["shards"] == 1
    done = cli("run", str(plan_path), *MODEL, "--steps", "4", "--ps-shards", "1", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ps_shards"] == 1
    stage = plan["stages"][0]["resource"]
    rows = [{k: p[k] for k in ("rank", "role", "resource", "binding")}
            for p in summary["processes"]]
    assert rows == [
        {"rank": 0, "role": "stage 1 replica 0", "resource": stage, "binding": "cpu"},
        {"rank": 1, "role": "ps shard 0", "resource": server["resource"], "binding": "cpu"},
    ]
    assert summary["binding"] == {stage: "cpu", server["resource"]: "cpu"}


def test_another_shard_count_without_reevaluate_is_refused_naming_the_flag(
    profiled: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, plan_path, _ = profiled
    done = cli("run", str(plan_path), *MODEL, "--steps", "4", "--ps-shards", "2")
    assert done.returncode == 2, done.stdout
    assert ("--ps-shards: the plan was priced for 1 parameter-server shard, not 2 "
            "parameter-server shards; run it as priced, or add --reevaluate INSTANCE.json"
            in done.stderr)
    assert "Traceback" not in done.stderr


def test_reevaluate_runs_two_shards_with_the_repriced_prediction(
    profiled: tuple[Path, Path, dict[str, Any]],
) -> None:
    instance_path, plan_path, plan = profiled
    server = plan["parameter_server"]
    done = cli("run", str(plan_path), *MODEL, "--steps", "4", "--ps-shards", "2",
               "--reevaluate", str(instance_path), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ps_shards"] == 2
    shards = [p for p in summary["processes"] if p["role"].startswith("ps shard")]
    assert [(p["role"], p["resource"]) for p in shards] == [
        ("ps shard 0", server["resource"]), ("ps shard 1", server["resource"])]
    # Re-priced: one more shard of the server's type, the rest as planned.
    per_shard = server["cost_per_hour"] / server["shards"]
    assert summary["cost_per_hour"] == pytest.approx(plan["cost_per_hour"] + per_shard)
    repriced = next(line for line in done.stderr.splitlines() if line.startswith("re-priced"))
    assert f"2 parameter-server shards on {server['resource']}" in repriced
    assert f"{summary['predicted_throughput']:,.0f} samples/s" in repriced


def test_a_plan_without_a_server_runs_with_one_shard(
    profiled: tuple[Path, Path, dict[str, Any]], tmp_path: Path,
) -> None:
    """A v2 plan priced without a server role (tables with their stage) does not price the
    shards, so `--ps-shards` is the runtime's choice: 1 is not 'priced for None'."""
    instance_path, _, _ = profiled
    data = json.loads(instance_path.read_text())
    data.pop("parameter_server", None)
    data["version"] = 2
    for layer in data["layers"]:
        layer.pop("sparse_pull_mb", None)
        layer.pop("sparse_push_mb", None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(data))
    done = cli("plan", str(bare), "--sync", "bsp", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parameter_server"] is None
    plan = tmp_path / "plan.json"
    plan.write_text(done.stdout)
    done = cli("run", str(plan), *MODEL, "--steps", "4", "--ps-shards", "1", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ps_shards"] == 1
    assert [p["role"] for p in summary["processes"]][-1] == "ps shard 0"
