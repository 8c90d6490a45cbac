"""Input on real processes: sharded data, the Criteo file, held-out logloss and AUC."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from heterps_core.runtime.datasource import held_out, replica_batches
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.launcher import RunConfig, launch
from heterps_core.runtime.models import resolve_model
from heterps_core.zoo.criteo import criteo_stream
from heterps_core.zoo.evaluation import evaluate

ROOT = Path(__file__).parents[3]
SAMPLE = ROOT / "tests" / "data" / "criteo_sample.tsv"


def plain_run_and_held_out(train, steps_eval):
    """The plain loop (SGD everywhere, the settings' default) on the same stream, evaluated
    on the held-out set at `steps_eval`."""
    zoo = resolve_model(train.model)
    config = zoo.config(train.size)
    model = zoo.build(config, seed=train.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=train.lr)
    batches = replica_batches(train, zoo, config)
    held = held_out(train, zoo, config)
    assert held is not None
    out = {}
    for step in range(1, train.steps + 1):
        inputs, labels = next(batches)
        model.loss(model(inputs), labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step in steps_eval:
            out[step] = evaluate(model, held[0], held[1], step)
    return out


@pytest.mark.slow
def test_held_out_metrics_of_a_pipelined_run_equal_the_plain_models(jobs) -> None:
    train = replace(jobs.settings(20), eval_every=10, eval_samples=256)
    config = RunConfig(plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1]),
                       train=train, report_interval_s=0.2)
    result = launch(config)
    assert [h["step"] for h in result.held_out] == [10, 20]
    assert result.last_sample is not None and result.last_sample.held_out == result.held_out[-1]
    plain = plain_run_and_held_out(train, {10, 20})
    for got in result.held_out:
        want = plain[got["step"]]
        assert got["samples"] == 256
        assert got["logloss"] == pytest.approx(want.logloss, abs=1e-5)
        assert want.auc is not None and got["auc"] == pytest.approx(want.auc, abs=1e-4)
        assert 0.0 <= got["auc"] <= 1.0


@pytest.mark.slow
def test_two_replicas_read_disjoint_halves_of_the_stream(jobs) -> None:
    # Stage 1 with two replicas, each making only its own mini-batches: the last stage
    # finishes all 8, the first being the single stream's first (its loss equals the plain
    # model's on it), and evaluates on the path of mini-batches 4 and 8 (replica 1's).
    train = replace(jobs.settings(8, micro_batches=2), eval_every=4, eval_samples=128)
    config = RunConfig(plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 1]),
                       train=train, report_interval_s=0.2)
    result = launch(config)
    assert len(result.losses) == 8
    zoo = resolve_model(train.model)
    cfg = zoo.config(train.size)
    model = zoo.build(cfg, seed=train.seed)
    inputs, labels = next(replica_batches(train, zoo, cfg))
    first = float(model.loss(model(inputs), labels).detach())
    assert result.losses[0] == pytest.approx(first, abs=1e-5)
    assert [h["step"] for h in result.held_out] == [4, 8]


def test_a_bad_data_source_is_refused_before_anything_starts(jobs, tmp_path) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    cases = [
        ("parquet:x", 0, "data"),
        (f"criteo:{tmp_path / 'missing.tsv'}", 0, "data"),
        ("", 5, "eval_samples"),
    ]
    bad = tmp_path / "bad.tsv"
    bad.write_text("2\t1\n")
    cases.append((f"criteo:{bad}", 0, "data"))
    for data, every, field in cases:
        train = replace(jobs.settings(4), data=data, eval_every=every, eval_samples=0)
        with pytest.raises(RunConfigError) as info:
            launch(RunConfig(plan=plan, train=train))
        assert info.value.field == field


@pytest.mark.slow
def test_heterps_run_trains_from_a_criteo_file_and_reports_held_out_metrics(
    tmp_path: Path, jobs
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 1]).to_json())
    done = subprocess.run(
        [sys.executable, "-m", "heterps_core", "run", str(plan), "--model", "ctr_dnn",
         "--size", "tiny", "--steps", "12", "--batch-size", "8", "--data", f"criteo:{SAMPLE}",
         "--eval-every", "6", "--eval-samples", "16", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["data"] == f"criteo:{SAMPLE}" and summary["steps"] == 12
    assert [h["step"] for h in summary["held_out"]] == [6, 12]
    for held in summary["held_out"]:
        assert held["samples"] == 16 and 0 < held["logloss"] < 2
        assert held["auc"] is None or 0.0 <= held["auc"] <= 1.0
    assert 0 < summary["loss"] < 2
    assert "held-out logloss" in done.stderr  # the progress line shows it live


def test_the_criteo_stream_of_a_run_skips_the_held_out_lines(jobs) -> None:
    train = replace(jobs.settings(4), data=f"criteo:{SAMPLE}", eval_every=2, eval_samples=16,
                    batch_size=8)
    zoo = resolve_model(train.model)
    config = zoo.config(train.size)
    held = held_out(train, zoo, config)
    assert held is not None and held[1].shape == (16,)
    whole_file = list(itertools.islice(criteo_stream(SAMPLE, 8, config.vocab_sizes), 8))
    first = next(replica_batches(train, zoo, config))
    # Held out: lines 1-16 (file mini-batches 0-1); training starts at line 17.
    assert torch.equal(held[0]["sparse"], torch.cat([b[0]["sparse"] for b in whole_file[:2]]))
    assert torch.equal(first[0]["sparse"], whole_file[2][0]["sparse"])
