"""Server-side optimisers in real jobs: sync mode equals a plain loop with torch's own
optimisers (`nn.Embedding(sparse=True)` + SparseAdam / sparse Adagrad / SGD on the tables,
the dense optimiser on the rest), and bad optimiser settings are refused by field."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from heterps_core.runtime import checkpoint
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.launcher import Launcher, RunConfig, launch
from heterps_core.runtime.reference import train_plain

SYNC_TOLERANCE = 1e-5
STEPS = 24


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dense", "sparse", "shards"),
    [("sgd", "sgd:lr=0.1", 1), ("adam", "adagrad:lr=0.05", 2), ("adam", "adam:lr=0.01", 2)],
)
def test_a_sync_run_with_server_optimisers_equals_the_plain_loop(
    jobs, tmp_path: Path, dense: str, sparse: str, shards: int
) -> None:
    lr = 0.05 if dense == "sgd" else 0.002
    train = replace(jobs.settings(STEPS, lr=lr), optimizer=dense, sparse_optimizer=sparse)
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    result = launch(
        RunConfig(plan=plan, train=train, ps_shards=shards, checkpoint_dir=str(tmp_path))
    )
    plain = train_plain(train)
    assert len(result.losses) == STEPS
    torch.testing.assert_close(
        torch.tensor(result.losses), torch.tensor(plain.losses),
        rtol=SYNC_TOLERANCE, atol=SYNC_TOLERANCE,
    )
    assert sum(result.losses[-6:]) < sum(result.losses[:6])
    # The shards hold only rows that were touched, with their optimiser state.
    for rank in (2, 2 + shards - 1):
        table = checkpoint.load_part(tmp_path, STEPS, rank)["tables"][0]
        held = int((table["ids"] >= 0).sum())
        assert 0 < held < 26 * 100 / shards + 1  # tiny: 26 fields x 100 rows
        assert table["optimizer"]["name"] == sparse.split(":")[0]
        assert table["steps"] == STEPS


def test_bad_optimizer_settings_name_the_field(two_stage_plan, jobs) -> None:
    base = jobs.settings(8)
    cases = [
        (replace(base, optimizer="lamb"), "optimizer: must be one of adagrad, adam, sgd"),
        (replace(base, optimizer="adam:lr=1"), "optimizer: takes a name only"),
        (replace(base, sparse_optimizer="adam:lr=x"), "sparse_optimizer: lr must be a number"),
        (replace(base, table_optimizers={"3": "sgd"}), "table_optimizers: the model has tables"),
        (replace(base, evict_after=0), "evict_after: must be at least 1"),
    ]
    for train, message in cases:
        with pytest.raises(RunConfigError, match=message):
            Launcher(RunConfig(plan=two_stage_plan, train=train))


@pytest.mark.slow
def test_two_shards_with_adam_resume_into_the_uninterrupted_run(jobs, tmp_path: Path) -> None:
    train = replace(jobs.settings(24, lr=0.002), optimizer="adam", sparse_optimizer="adam:lr=0.01")
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    full_dir, resumed_dir = tmp_path / "full", tmp_path / "resumed"
    full = launch(RunConfig(plan=plan, train=train, ps_shards=2, checkpoint_dir=str(full_dir),
                            checkpoint_every=12))
    resumed_dir.mkdir()
    shutil.copytree(checkpoint.step_dir(full_dir, 12), checkpoint.step_dir(resumed_dir, 12))
    shutil.copy(full_dir / checkpoint.JOB_FILE, resumed_dir / checkpoint.JOB_FILE)
    second = launch(RunConfig(plan=plan, train=train, ps_shards=2,
                              checkpoint_dir=str(resumed_dir), checkpoint_every=12, resume=True))
    assert second.start_step == 12
    assert second.losses == pytest.approx(full.losses[12:], rel=1e-6, abs=1e-7)
    for rank in (2, 3):  # both shards: the same rows, moments, index and step count
        a = checkpoint.load_part(full_dir, 24, rank)["tables"][0]
        b = checkpoint.load_part(resumed_dir, 24, rank)["tables"][0]
        assert torch.equal(a["ids"], b["ids"]) and a["steps"] == b["steps"] == 24
        for x, y in zip(a["chunks"], b["chunks"], strict=True):
            torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_eviction_drops_cold_rows_on_the_server(jobs, tmp_path: Path) -> None:
    train = replace(jobs.settings(12), sparse_optimizer="adam:lr=0.01", evict_after=2)
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    result = launch(RunConfig(plan=plan, train=train, checkpoint_dir=str(tmp_path)))
    assert len(result.losses) == 12 and all(loss == loss for loss in result.losses)
    table = checkpoint.load_part(tmp_path, 12, 2)["tables"][0]
    assert table["evicted"] > 0  # power-law ids: the cold ones left again
    assert result.process_stats[2]["rows_held"] == int((table["ids"] >= 0).sum())
