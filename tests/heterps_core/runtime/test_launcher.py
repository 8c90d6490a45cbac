"""Real multi-process jobs (gloo on CPU, tiny CTR-DNN): equivalence, async, lifecycle."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from heterps_core.runtime import checkpoint
from heterps_core.runtime.errors import RunCancelled, RunConfigError, RunError
from heterps_core.runtime.launcher import Launcher, RunConfig, launch
from heterps_core.runtime.metrics import MetricsSample
from heterps_core.runtime.reference import train_plain

# Sync mode equals plain SGD up to float summation order (micro-batch losses are summed
# with weights n_i/N; sparse rows are coalesced before the update): measured ~1e-7.
SYNC_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory, jobs) -> tuple[object, Path]:
    """40 steps of a two-stage plan, checkpoints every 20: the uninterrupted reference run."""
    folder = tmp_path_factory.mktemp("full")
    samples: list[MetricsSample] = []
    config = RunConfig(
        plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1]),
        train=jobs.settings(40),
        checkpoint_dir=str(folder),
        checkpoint_every=20,
        report_interval_s=0.2,
    )
    result = launch(config, sink=samples.append)
    return (result, samples), folder


@pytest.mark.slow
def test_pipelined_sync_run_reaches_the_same_losses_as_a_plain_loop(full_run, jobs) -> None:
    (result, _), _ = full_run
    plain = train_plain(jobs.settings(40))
    assert len(result.losses) == 40
    assert torch.allclose(
        torch.tensor(result.losses),
        torch.tensor(plain.losses),
        rtol=SYNC_TOLERANCE,
        atol=SYNC_TOLERANCE,
    )
    assert sum(result.losses[-10:]) < sum(result.losses[:10])  # it does learn


@pytest.mark.slow
def test_a_three_stage_sync_run_without_micro_batches_matches_the_plain_loop(jobs) -> None:
    # The middle stage receives ahead from one side and sends ahead to the other, with whole
    # mini-batches: every posted receive must still meet the message it was posted for.
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-c", "cpu-c"], [1, 1, 1])
    result = launch(RunConfig(plan=plan, train=jobs.settings(30, micro_batches=1)))
    plain = train_plain(jobs.settings(30, micro_batches=1))
    assert torch.allclose(
        torch.tensor(result.losses),
        torch.tensor(plain.losses),
        rtol=SYNC_TOLERANCE,
        atol=SYNC_TOLERANCE,
    )


@pytest.mark.slow
def test_metrics_stream_covers_throughput_loss_stages_and_cost(full_run) -> None:
    (result, samples), _ = full_run
    assert samples[-1].final and samples[-1].step == 40
    assert [s.step for s in samples] == sorted(s.step for s in samples)
    with_loss = [s for s in samples if s.loss is not None]
    assert with_loss and all(0 < s.loss < 2 for s in with_loss)
    assert any(s.samples_per_s > 0 for s in samples)
    busy = {stage: sum(s.stages[stage - 1].busy_s for s in samples) for stage in (1, 2)}
    assert all(b > 0 for b in busy.values())
    assert result.busy_s[1] > 0 and result.idle_s[2] > 0
    # cost accrues as units x price x elapsed: 1 x 0.5 + 1 x 1.5 $/h
    assert result.plan.cost_per_hour == pytest.approx(2.0)
    assert samples[-1].cost == pytest.approx(2.0 * samples[-1].elapsed_s / 3600)
    assert result.throughput > 0
    assert any("binding: cpu=cpu,cpu-b=cpu" in note for note in result.plan.notes)


@pytest.mark.slow
def test_resume_from_a_checkpoint_gives_the_uninterrupted_results(full_run, tmp_path, jobs) -> None:
    # The full run's step-20 checkpoint is where a run stopped at step 20 would stand;
    # resuming from a copy of it must reproduce the full run's steps 20..39 and its end state.
    (full, _), full_dir = full_run
    shutil.copytree(checkpoint.step_dir(full_dir, 20), checkpoint.step_dir(tmp_path, 20))
    shutil.copy(full_dir / checkpoint.JOB_FILE, tmp_path / checkpoint.JOB_FILE)
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    second = launch(
        RunConfig(
            plan=plan,
            train=jobs.settings(40),
            checkpoint_dir=str(tmp_path),
            checkpoint_every=20,
            resume=True,
        )
    )
    assert second.start_step == 20 and len(second.losses) == 20
    assert second.losses == pytest.approx(full.losses[20:], rel=1e-6, abs=1e-7)
    for rank in range(3):  # stage 1, stage 2, parameter server: identical final states
        a = checkpoint.load_part(full_dir, 40, rank)
        b = checkpoint.load_part(tmp_path, 40, rank)
        key = "layers" if "layers" in a else "tables"  # a server's: rows, state, id index
        values_a, values_b = _tensors(a[key]), _tensors(b[key])
        assert len(values_a) == len(values_b) and (rank != 2 or values_a)
        for x, y in zip(values_a, values_b, strict=True):
            assert x.shape == y.shape and torch.allclose(x.double(), y.double(), atol=1e-6)


def _tensors(state: object) -> list[torch.Tensor]:
    """Every tensor in a nested checkpoint part, in a fixed order."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        return [t for key in sorted(state) for t in _tensors(state[key])]
    if isinstance(state, list | tuple):
        return [t for item in state for t in _tensors(item)]
    return []


@pytest.mark.slow
def test_replicas_share_dense_weights_and_async_ps_still_learns(tmp_path, jobs) -> None:
    # Stage 1 has two replicas fed round-robin (m mod 2) and all-reduced; the embedding stage
    # has two replicas pushing to the parameter server without waiting.
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 2])
    result = launch(
        RunConfig(plan=plan, train=jobs.settings(60, sync="async"), checkpoint_dir=str(tmp_path))
    )
    plain = train_plain(jobs.settings(60))
    assert len(result.losses) == 60
    stage2 = [checkpoint.load_part(tmp_path, 60, rank)["layers"] for rank in (2, 3)]
    for name, value in stage2[0].items():
        assert torch.equal(value, stage2[1][name]), name
    # Two replicas average two mini-batches per step, so the runtime takes half as many
    # (larger) steps as the plain loop: it still learns, at a comparable rate (documented).
    first, last = sum(result.losses[:15]) / 15, sum(result.losses[-15:]) / 15
    plain_gain = sum(plain.losses[:15]) / 15 - sum(plain.losses[-15:]) / 15
    assert last < first
    assert first - last > 0.3 * plain_gain


def test_bad_run_settings_are_refused_before_any_process_starts(two_stage_plan, jobs) -> None:
    with pytest.raises(RunConfigError, match="sync: unknown sync mode 'nope'"):
        Launcher(RunConfig(plan=two_stage_plan, train=jobs.settings(4, sync="nope")))
    with pytest.raises(RunConfigError, match="model: unknown model 'nope'"):
        Launcher(
            RunConfig(
                plan=two_stage_plan,
                train=jobs.settings(4).__class__(model="nope", steps=4, batch_size=8),
            )
        )
    with pytest.raises(RunConfigError, match="steps: must be a multiple of 2"):
        Launcher(
            RunConfig(
                plan=jobs.plan_for(["cpu", "cpu", "cpu-b", "cpu-b"], [2, 1]), train=jobs.settings(5)
            )
        )
    with pytest.raises(RunConfigError, match="plan: covers 3 layers"):
        Launcher(
            RunConfig(plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b"], [1, 1]), train=jobs.settings(4))
        )
    with pytest.raises(RunConfigError, match="resume: needs a checkpoint directory"):
        Launcher(RunConfig(plan=two_stage_plan, train=jobs.settings(4), resume=True))


@pytest.mark.slow
def test_a_killed_worker_stops_the_job_with_a_readable_error(
    two_stage_plan, tmp_path, jobs
) -> None:
    killed_at: list[float] = []
    launcher: Launcher

    def kill_stage_two(sample: MetricsSample) -> None:
        if sample.step >= 4 and not killed_at:
            os.kill(launcher.pids[1], signal.SIGKILL)
            killed_at.append(time.monotonic())

    launcher = Launcher(
        RunConfig(
            plan=two_stage_plan,
            train=jobs.settings(2000),
            checkpoint_dir=str(tmp_path),
            checkpoint_every=2,
            report_interval_s=0.1,
        ),
        sink=kill_stage_two,
    )
    with pytest.raises(RunError) as info:
        launcher.run()
    assert time.monotonic() - killed_at[0] < 5.0
    message = str(info.value)
    assert message.startswith("stage 2 replica 0 (rank 1) was killed by SIGKILL (exit code -9)")
    assert jobs.live_processes_mentioning(launcher.address) == []
    step = checkpoint.latest_complete(tmp_path, 3)
    assert step is not None and step >= 2 and f"last complete checkpoint: step {step}" in message
    for rank in range(3):
        assert checkpoint.load_part(tmp_path, step, rank)


@pytest.mark.slow
def test_cancel_stops_every_process_and_keeps_the_checkpoint(
    two_stage_plan, tmp_path, jobs
) -> None:
    cancel = threading.Event()

    def cancel_after_three(sample: MetricsSample) -> None:
        if sample.step >= 3:
            cancel.set()

    launcher = Launcher(
        RunConfig(
            plan=two_stage_plan,
            train=jobs.settings(2000),
            checkpoint_dir=str(tmp_path),
            checkpoint_every=2,
            report_interval_s=0.1,
        ),
        sink=cancel_after_three,
        cancel=cancel,
    )
    with pytest.raises(RunCancelled) as info:
        launcher.run()
    assert info.value.step >= 3
    assert jobs.live_processes_mentioning(launcher.address) == []
    assert info.value.checkpoint_step == checkpoint.latest_complete(tmp_path, 3)
    assert info.value.checkpoint_step is not None


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)")
def test_a_gpu_bound_dense_stage_matches_the_plain_loop(jobs) -> None:
    # Stage 1 (embedding) on the CPU, stage 2 on cuda:0: activations cross by gloo via the
    # CPU, compute runs on the GPU; NCCL would carry tensors only between two GPU stages.
    from heterps_core.runtime.binding import Target

    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    result = launch(
        RunConfig(plan=plan, train=jobs.settings(20), binding={"cpu-b": Target("cuda", index=0)})
    )
    plain = train_plain(jobs.settings(20))
    assert torch.allclose(torch.tensor(result.losses), torch.tensor(plain.losses), atol=1e-4)


@pytest.mark.slow
def test_a_resume_seals_only_its_own_steps_and_falls_back_past_a_damaged_one(
    two_stage_plan, jobs, tmp_path, capsys
) -> None:
    """Issue 23.2 on real runs: a stale step folder of an earlier attempt (every part there,
    no manifest) is not sealed by the next run, and a sealed step whose shard part was cut
    short is refused: the resume falls back to the newest verified step, says so on the
    CLI's stderr, and keeps the damaged folder aside."""
    import json

    from heterps_core.cli import main

    ckpt = tmp_path / "ckpt"
    launch(RunConfig(plan=two_stage_plan, train=jobs.settings(4), checkpoint_dir=str(ckpt),
                     checkpoint_every=2))
    assert checkpoint.complete_steps(ckpt, 3) == [2, 4]
    # An earlier attempt's parts at a step the next run never writes (it checkpoints at 4, 8).
    shutil.copytree(checkpoint.step_dir(ckpt, 4), checkpoint.step_dir(ckpt, 6),
                    ignore=shutil.ignore_patterns(checkpoint.MANIFEST))
    shard = Path(checkpoint.step_dir(ckpt, 4)) / "rank2.pt"
    size = shard.stat().st_size
    shard.write_bytes(shard.read_bytes()[: size // 3])
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(two_stage_plan.to_dict()))
    code = main(["run", str(plan_file), "--model", "ctr_dnn", "--size", "tiny", "--steps", "8",
                 "--batch-size", "64", "--seed", "3", "--lr", "0.05", "--optimizer", "sgd",
                 "--micro-batches", "4", "--sync", "bsp", "--checkpoint-dir", str(ckpt),
                 "--checkpoint-every", "4", "--resume", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["start_step"] == 2
    warning = next(line for line in err.splitlines() if "warning" in line)
    assert warning.startswith("heterps run: warning: resuming from step 2, "), warning
    assert f"rank2.pt is {size // 3} bytes, its manifest says {size}: truncated" in warning
    aside = [p.name for p in ckpt.iterdir() if p.name.startswith("step-00000004.damaged")]
    assert len(aside) == 1 and f"kept as {ckpt / aside[0]}" in warning, (aside, warning)
    assert (ckpt / aside[0] / "rank2.pt").stat().st_size == size // 3  # kept as it was
    # The resumed run wrote and sealed 4 and 8 itself; the stale step 6 stays unsealed.
    assert checkpoint.complete_steps(ckpt, 3) == [4, 8]
    assert not (Path(checkpoint.step_dir(ckpt, 6)) / checkpoint.MANIFEST).exists()
