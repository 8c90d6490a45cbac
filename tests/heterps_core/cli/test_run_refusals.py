"""`heterps run` refuses bad input that needs no model before torch is imported: each case
is a real `heterps run` process that must exit 2 with the field-named line and must never
have imported torch (the process asserts it after the command returns)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from heterps_core import zoo
from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance

ROOT = Path(__file__).resolve().parents[3]

# The CLI's main, then the one check that matters here: was torch ever imported?
NO_TORCH = (
    "import sys\n"
    "from heterps_core.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "assert 'torch' not in sys.modules, 'torch was imported'\n"
    "sys.exit(code)\n"
)


def instance(version: int = 1) -> Instance:
    names = ["cpu", "cpu-b"]
    return Instance.from_dict({
        "version": version,
        "batch_size": 64,
        "throughput_target": 100,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0, "count": 2,
                       "memory_gb": 8, "network_gbps": 10} for n in names],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: 0.01 for n in names}, "output_mb": 0.01,
                    "sync_mb": 0.0, "memory_gb": 0.1, "shardable": i == 0}
                   for i in range(4)],
    })


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("plans")
    assignment = ["cpu", "cpu-b", "cpu-b", "cpu-b"]
    paths = {"v1": folder / "plan.json", "v2": folder / "plan-v2.json",
             "broken": folder / "broken.json"}
    paths["v1"].write_text(evaluate(instance(), assignment).to_json())
    paths["v2"].write_text(evaluate(instance().as_v2("bsp", 4), assignment).to_json())
    paths["broken"].write_text("{not json")
    return paths


def heterps_run(plan: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, "run", str(plan), "--steps", "4", *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )


@pytest.mark.parametrize(
    ("plan", "extra", "message"),
    [
        ("v1", ["--model", "ctr_dnn", "--bind", "cpu=tpu"],
         "heterps run: error: bind.cpu: unknown target 'tpu'"),
        ("v1", ["--model", "ctr_dnn", "--bind", "gpu=cpu"],
         "heterps run: error: bind.gpu: the plan has no resource type"),
        ("v1", ["--model", "nope"], "heterps run: error: model: unknown model 'nope'; known: "),
        ("v1", ["--model", "missing.py:Net"],
         "heterps run: error: model: no such model file 'missing.py'"),
        ("v1", ["--model", "ctr_dnn", "--ps-shards", "0"],
         "heterps run: error: --ps-shards: must be at least 1, got 0"),
        ("v1", ["--model", "ctr_dnn", "--sync", "ssp"],
         "heterps run: error: sync: unknown sync mode 'ssp'"),
        ("v2", ["--model", "ctr_dnn", "--sync", "async"],
         "heterps run: error: --sync: the plan was priced for bsp, not async"),
        ("v1", ["--model", "ctr_dnn", "--resume"],
         "heterps run: error: resume: needs a checkpoint directory"),
        ("missing", ["--model", "ctr_dnn"], "heterps run: error: "),
        ("broken", ["--model", "ctr_dnn"], "heterps run: error: "),
    ],
)
def test_bad_input_is_refused_before_torch_is_imported(
    plans: dict[str, Path], plan: str, extra: list[str], message: str, tmp_path: Path
) -> None:
    path = plans.get(plan, tmp_path / "nope.json")
    done = heterps_run(path, *extra)
    assert "torch was imported" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(message), done.stderr
    if plan == "missing":
        assert "nope.json: cannot read file" in done.stderr
    if plan == "broken":
        assert "broken.json: not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_torch_free_model_names_are_the_registry_s() -> None:
    # The early check reads names without loading the models; the registry loads them.
    assert sorted(zoo.BUILTIN_NAMES) == zoo.names()
