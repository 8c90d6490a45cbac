"""`heterps run --json`: stages next to the plan, the one measured throughput, and the plan
re-evaluated with what ran, on a real two-stage run whose GPU type ran on this CPU (a
substitute by the plan file's provenance: its figures are estimated; the CPU type's were
measured on this machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heterps_core import provenance
from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.provenance import ResourceProvenance, Tier, this_host

ROOT = Path(__file__).resolve().parents[3]


def gpu_plan(folder: Path) -> Path:
    names = {"cpu": "cpu", "gpu-t4": "gpu"}
    instance = Instance.from_dict({
        "version": 1, "batch_size": 64, "throughput_target": 100,
        "resources": [{"name": n, "kind": kind, "price_per_hour": 1.0, "count": 2,
                       "memory_gb": 8, "network_gbps": 10} for n, kind in names.items()],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: 0.01 for n in names}, "output_mb": 0.01, "sync_mb": 0.0,
                    "memory_gb": 0.1, "shardable": i == 0} for i in range(4)],
    })
    plan = evaluate(instance, ["cpu", "gpu-t4", "gpu-t4", "gpu-t4"]).to_dict()
    # As `heterps plan --json` writes it: where each type's figures come from. The CPU type
    # was measured on this machine; the T4 is an estimate (a substitute on this CPU).
    plan["provenance"] = provenance.to_json({
        "cpu": ResourceProvenance(Tier.HERE, "cpu (1 threads, test)", host=this_host()),
        "gpu-t4": ResourceProvenance(Tier.ESTIMATED, "roofline for gpu-t4", band=0.25)})
    path = folder / "plan.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.slow
def test_json_has_stages_and_the_prediction_as_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "heterps_core", "run", str(gpu_plan(tmp_path)), "--model",
         "ctr_dnn", "--size", "tiny", "--steps", "24", "--batch-size", "32",
         "--bind", "cpu=cpu,gpu-t4=cpu", "--sync", "bsp", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    # The one definition: samples of the mini-batches after the first over their span.
    assert summary["samples_in_span"] == 23 * 32
    assert summary["throughput"] == pytest.approx(summary["samples_in_span"] / summary["span_s"])
    assert summary["startup_s"] > 0
    stages = summary["stages"]
    assert [(s["resource"], s["units"], s["bound_to"]) for s in stages] == [
        ("cpu", 1, "cpu"), ("gpu-t4", 1, "cpu")]
    for s in stages:
        assert 0 < s["busy_share"] <= 1
        assert s["measured_time_per_batch_s"] > 0 and s["predicted_time_per_batch_s"] > 0
    assert [s["substitute"] for s in stages] == [False, True]
    assert summary["substitutes"] == ["stage 2 (gpu-t4) ran on cpu"]
    as_run = summary["predicted_throughput_as_run"]
    assert as_run is not None and as_run > 0
    # bsp flushes: the stages take turns, so the as-run prediction composes their times.
    times = [s["measured_time_per_batch_s"] for s in stages]
    assert as_run == pytest.approx(32 / sum(times), rel=1e-6)
    assert any("re-evaluated" in note for note in summary["notes"])
