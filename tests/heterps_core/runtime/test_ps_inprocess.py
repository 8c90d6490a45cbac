"""Shards served inside their only client's process (runtime/ps_inprocess.py), on real
processes: the same losses as the plain loop and as shards of their own, checkpoints that
resume bit-identically in either layout, and the wire wherever the shard is shared or
remote."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from heterps_core.runtime import checkpoint
from heterps_core.runtime.assignment import IN_PROCESS_ENV, in_process_shards, launched_here
from heterps_core.runtime.binding import Target, parse_target
from heterps_core.runtime.launcher import RunConfig, launch
from heterps_core.runtime.reference import train_plain
from heterps_core.runtime.result import RunResult
from heterps_core.runtime.spec import JobSpec, StageSpec, TrainSettings, layout

SYNC_TOLERANCE = 1e-5
STEPS = 16


def spec_of(units: list[int], shards: int, ps_target: str = "cpu",
            stage_target: str = "cpu") -> JobSpec:
    stages = (StageSpec(0, 0, "emb", units[0]), StageSpec(1, 3, "dense", units[1]))
    binding = {"emb": parse_target(stage_target), "dense": Target("cpu")}
    ranks = layout(stages, binding, shards, ps_target, "server")
    return JobSpec(train=TrainSettings(model="ctr_dnn", steps=8, batch_size=8), stages=stages,
                   ranks=ranks, ps_shards=shards)


def test_the_shards_of_one_local_single_replica_client_are_served_in_its_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = in_process_shards(spec_of([1, 1], 3), table_layers=[0])
    assert [r.host for r in spec.ranks] == [-1, -1, 0, 0, 0]
    assert [r.rank for r in spec.processes] == [0, 1]
    assert [r.rank for r in spec.hosted_shards(0)] == [2, 3, 4]
    assert not any(launched_here(r) for r in spec.ranks[2:])
    assert spec.ranks[2].describe() == "parameter server shard 0 (rank 2, in rank 0's process)"
    assert JobSpec.from_json(spec.to_json()) == spec
    # The wire: two replicas share the shards, they are remote, the client is, or it is off.
    wire = [
        in_process_shards(spec_of([2, 1], 1), [0]),
        in_process_shards(spec_of([1, 1], 1, ps_target="remote"), [0]),
        in_process_shards(spec_of([1, 1], 1, stage_target="remote"), [0]),
        in_process_shards(spec_of([1, 1], 1), [0, 2]),  # tables in two stages
    ]
    monkeypatch.setenv(IN_PROCESS_ENV, "0")
    wire.append(in_process_shards(spec_of([1, 1], 1), [0]))
    for spec in wire:
        assert all(r.host == -1 for r in spec.ranks) and spec.processes == spec.ranks


def _run(jobs, train: TrainSettings, shards: int, folder: Path, monkeypatch: pytest.MonkeyPatch,
         wire: bool, units: tuple[int, ...] = (1, 1), **config: object) -> RunResult:
    monkeypatch.setenv(IN_PROCESS_ENV, "0" if wire else "1")
    layers = ["cpu", "cpu-b", "cpu-b", "cpu-b"] if len(units) == 2 else ["cpu"] * 4
    plan = jobs.plan_for(layers, list(units))
    return launch(RunConfig(plan=plan, train=train, ps_shards=shards,
                            checkpoint_dir=str(folder), **config))  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dense", "sparse", "shards"),
    [("sgd", "sgd:lr=0.1", 1), ("adam", "adagrad:lr=0.05", 3), ("adam", "adam:lr=0.01", 3)],
)
def test_an_in_process_sync_run_equals_the_plain_loop_and_the_shard_processes(
    jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense: str, sparse: str, shards: int
) -> None:
    lr = 0.05 if dense == "sgd" else 0.002
    train = replace(jobs.settings(STEPS, lr=lr), optimizer=dense, sparse_optimizer=sparse)
    inside = _run(jobs, train, shards, tmp_path / "inside", monkeypatch, wire=False)
    apart = _run(jobs, train, shards, tmp_path / "apart", monkeypatch, wire=True)
    assert len(inside.pids) == 2 and len(apart.pids) == 2 + shards  # no shard process
    torch.testing.assert_close(torch.tensor(inside.losses), torch.tensor(train_plain(train).losses),
                               rtol=SYNC_TOLERANCE, atol=SYNC_TOLERANCE)
    assert inside.losses == pytest.approx(apart.losses, rel=1e-6, abs=1e-7)
    for rank in range(2, 2 + shards):
        # Each shard's part and stats under its rank, as a shard process writes them.
        a = checkpoint.load_part(tmp_path / "inside", STEPS, rank)["tables"][0]
        b = checkpoint.load_part(tmp_path / "apart", STEPS, rank)["tables"][0]
        assert torch.equal(a["ids"], b["ids"]) and a["steps"] == b["steps"] == STEPS
        held = int((a["ids"] >= 0).sum())
        assert inside.process_stats[rank]["rows_held"] == held > 0
        assert apart.process_stats[rank]["rows_held"] == held
        assert inside.process_stats[rank]["table_bytes"] > 0
        assert "peak_rss_bytes" not in inside.process_stats[rank]  # it is rank 0's memory


@pytest.mark.slow
def test_an_in_process_checkpoint_resumes_bit_identically_in_either_layout(
    jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = replace(jobs.settings(STEPS, lr=0.002), optimizer="adam",
                    sparse_optimizer="adam:lr=0.01")
    full = _run(jobs, train, 2, tmp_path / "full", monkeypatch, wire=False, checkpoint_every=8)
    results = {}
    for wire in (False, True):
        folder = tmp_path / f"resumed-{wire}"
        folder.mkdir()
        shutil.copytree(checkpoint.step_dir(tmp_path / "full", 8), checkpoint.step_dir(folder, 8))
        shutil.copy(tmp_path / "full" / checkpoint.JOB_FILE, folder / checkpoint.JOB_FILE)
        results[wire] = _run(jobs, train, 2, folder, monkeypatch, wire=wire, checkpoint_every=8,
                             resume=True)
        assert results[wire].start_step == 8
        for rank in (2, 3):  # the same rows, moments, index and update count per shard
            a = checkpoint.load_part(tmp_path / "full", STEPS, rank)["tables"][0]
            b = checkpoint.load_part(folder, STEPS, rank)["tables"][0]
            assert torch.equal(a["ids"], b["ids"]) and a["steps"] == b["steps"] == STEPS
            for x, y in zip(a["chunks"], b["chunks"], strict=True):
                assert torch.equal(x, y)
    assert results[False].losses == full.losses[8:]  # bit-identical
    assert results[True].losses == pytest.approx(full.losses[8:], rel=1e-6, abs=1e-7)


@pytest.mark.slow
def test_a_shard_two_replicas_share_keeps_its_process_and_the_wire(
    jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = jobs.settings(8)
    result = _run(jobs, train, 1, tmp_path, monkeypatch, wire=False, units=(2, 1))
    assert len(result.pids) == 4  # two stage 1 replicas, stage 2, the shard
    assert result.process_stats[3]["rows_held"] > 0
    assert result.process_stats[3]["peak_rss_bytes"] > 0  # its own process
    torch.testing.assert_close(torch.tensor(result.losses), torch.tensor(train_plain(train).losses),
                               rtol=SYNC_TOLERANCE, atol=SYNC_TOLERANCE)


@pytest.mark.slow
def test_async_in_process_is_the_plain_loop_and_the_wire_pulls_one_push_ahead(
    jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One stage, one shard: in-process, each pull follows the previous push (the plain
    # loop); on the wire the next pull is posted before this push (PSClient.prefetch), so
    # its rows miss that one update: the first mini-batch is the same, later ones differ.
    train = replace(jobs.settings(STEPS, micro_batches=1, sync="async"), optimizer="adam",
                    sparse_optimizer="adam:lr=0.01", lr=0.002)
    plain = train_plain(train).losses
    inside = _run(jobs, train, 1, tmp_path / "inside", monkeypatch, wire=False, units=(1,))
    ahead = _run(jobs, train, 1, tmp_path / "ahead", monkeypatch, wire=True, units=(1,))
    torch.testing.assert_close(torch.tensor(inside.losses), torch.tensor(plain),
                               rtol=SYNC_TOLERANCE, atol=SYNC_TOLERANCE)
    assert ahead.losses[0] == pytest.approx(plain[0], rel=1e-6)
    assert max(abs(a - b) for a, b in zip(ahead.losses, plain, strict=True)) > 1e-4
    # One mini-batch staler, not another run: the mean loss stays within 2% of the loop's.
    assert sum(ahead.losses) == pytest.approx(sum(plain), rel=0.02), (ahead.losses, plain)
