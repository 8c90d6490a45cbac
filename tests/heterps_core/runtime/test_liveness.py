"""Across machines, on real processes: shards on agents, lost machines, stopped ranks, drains.

Two or three "machines" are agent processes on loopback, each providing one resource type;
a machine is lost by SIGKILL of its agent (its processes die with it), a rank is stopped
by SIGSTOP, a spot notice is a SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from heterps_core import rendezvous as keys
from heterps_core.plan import Plan, ServerPlacement
from heterps_core.runtime import checkpoint, liveness
from heterps_core.runtime.assignment import IN_PROCESS_ENV
from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunConfigError, RunError, RunPreempted
from heterps_core.runtime.launcher import Launcher, RunConfig, launch
from heterps_core.runtime.metrics import MetricsSample
from heterps_core.runtime.reference import train_plain


def start_agent(address: str, provides: str, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "heterps_core.runtime.agent", "--coordinator", address,
         "--provides", provides, "--name", name, "--join-timeout", "60"],
    )


def stop_agents(agents: list[subprocess.Popen[bytes]]) -> list[int | None]:
    codes = []
    for agent in agents:
        try:
            codes.append(agent.wait(30))
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
            codes.append(None)
    return codes


def server_plan(jobs, shards: int = 2) -> Plan:
    """Stage 1 on `cpu`, stage 2 on `cpu-b`, the parameter server placed on `cpu-ps` (v2)."""
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    return replace(plan, parameter_server=ServerPlacement("cpu-ps", shards, 0.001, 1e6, 0.5, 0.1))


@pytest.mark.slow
def test_shards_run_on_the_agent_of_their_planned_type_and_match_the_plain_loop(jobs) -> None:
    remote = {"cpu-b": Target("remote"), "cpu-ps": Target("remote")}
    launcher = Launcher(
        RunConfig(plan=server_plan(jobs), train=jobs.settings(12), binding=remote, ps_shards=2)
    )
    assert [(r.role, r.target, r.resource) for r in launcher.spec.ranks] == [
        ("stage", "cpu", "cpu"), ("stage", "remote", "cpu-b"),
        ("ps", "remote", "cpu-ps"), ("ps", "remote", "cpu-ps"),
    ]
    launcher.start()
    assert list(launcher.pids) == [0]  # only stage 1 runs at the coordinator
    agents = [start_agent(launcher.address, "cpu-b", "machine-b"),
              start_agent(launcher.address, "cpu-ps", "machine-ps")]
    try:
        result = launcher.wait()
    finally:
        codes = stop_agents(agents)
    assert codes == [0, 0]
    plain = train_plain(jobs.settings(12))
    assert torch.allclose(torch.tensor(result.losses), torch.tensor(plain.losses), atol=1e-5)
    assert set(result.process_stats) == {0, 1, 2, 3}  # the shards reported from machine-ps
    assert all(result.process_stats[r]["rows_held"] > 0 for r in (2, 3))


@pytest.mark.slow
def test_a_lost_machine_is_named_with_its_ranks_not_the_survivors(jobs, tmp_path) -> None:
    remote = {"cpu-b": Target("remote"), "cpu-ps": Target("remote")}
    agents: list[subprocess.Popen[bytes]] = []
    killed_at: list[float] = []

    def lose_the_server_machine(sample: MetricsSample) -> None:
        if sample.step >= 4 and not killed_at:
            agents[1].send_signal(signal.SIGKILL)  # its shards die with it (PDEATHSIG)
            killed_at.append(time.monotonic())

    launcher = Launcher(
        RunConfig(plan=server_plan(jobs), train=jobs.settings(4000), binding=remote,
                  ps_shards=2, checkpoint_dir=str(tmp_path), checkpoint_every=2,
                  report_interval_s=0.1),
        sink=lose_the_server_machine,
    )
    launcher.start()
    agents += [start_agent(launcher.address, "cpu-b", "machine-b"),
               start_agent(launcher.address, "cpu-ps", "machine-ps")]
    try:
        with pytest.raises(RunError) as info:
            launcher.wait()
    finally:
        stop_agents(agents)
    message = str(info.value)
    assert message.startswith("machine machine-ps (agent "), message
    assert ("was lost: no heartbeat for" in message
            and "it ran parameter server shard 0 (rank 2), parameter server shard 1 (rank 3)"
            in message), message
    assert "last complete checkpoint: step" in message
    assert time.monotonic() - killed_at[0] < 15.0  # heartbeat timeout 5 s, then the report
    assert jobs.live_processes_mentioning(launcher.address) == []


@pytest.mark.slow
def test_a_stopped_rank_is_named_by_the_watchdog_within_30_s(two_stage_plan, jobs) -> None:
    stopped_at: list[float] = []
    launcher: Launcher

    def stop_stage_two(sample: MetricsSample) -> None:
        if sample.step >= 4 and not stopped_at:
            os.kill(launcher.pids[1], signal.SIGSTOP)
            stopped_at.append(time.monotonic())

    launcher = Launcher(
        RunConfig(plan=two_stage_plan, train=jobs.settings(4000), report_interval_s=0.1),
        sink=stop_stage_two,
    )
    with pytest.raises(RunError) as info:
        launcher.run()
    named_after = time.monotonic() - stopped_at[0]
    assert named_after < 30.0
    message = str(info.value)
    assert message.startswith(f"stage 2 replica 0 (rank 1) (pid {launcher.pids[1]} on "), message
    assert "stopped making progress: no heartbeat for" in message
    assert jobs.live_processes_mentioning(launcher.address) == []


@pytest.mark.slow
def test_sigterm_on_an_agent_drains_to_a_complete_checkpoint_that_resumes(jobs, tmp_path) -> None:
    # A spot notice on machine-b: every stage checkpoints at one step and ends; resuming
    # from it gives exactly the uninterrupted run's losses (bsp).
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    # Far more than the drain needs: on a loaded machine 400 steps ended before the notice
    # reached every process (seen: the drain step was the last step).
    steps = 4000
    agents: list[subprocess.Popen[bytes]] = []
    sent: list[int] = []

    def notice(sample: MetricsSample) -> None:
        if sample.step >= 6 and not sent:
            agents[0].send_signal(signal.SIGTERM)
            sent.append(sample.step)
    config = RunConfig(plan=plan, train=jobs.settings(steps), binding={"cpu-b": Target("remote")},
                       checkpoint_dir=str(tmp_path), checkpoint_every=1000,
                       report_interval_s=0.1)
    launcher = Launcher(config, sink=notice)
    launcher.start()
    agents.append(start_agent(launcher.address, "cpu-b", "machine-b"))
    try:
        with pytest.raises(RunPreempted) as info:
            launcher.wait()
    finally:
        codes = stop_agents(agents)
    assert codes == [0]  # the agent's processes ended after their checkpoint
    step = info.value.step
    assert 6 < step < steps and info.value.checkpoint_step == step
    assert "machine machine-b got SIGTERM" in str(info.value)
    assert checkpoint.complete_steps(tmp_path, 3) == [step]
    resumed = launch(replace(config, binding={}, resume=True, train=jobs.settings(step + 8)))
    assert resumed.start_step == step
    plain = train_plain(jobs.settings(step + 8))
    assert resumed.losses == pytest.approx(plain.losses[step:], rel=1e-5, abs=1e-5)


@pytest.mark.slow
def test_sigterm_on_the_coordinator_writes_a_final_checkpoint_and_a_cut_one_is_refused(
    two_stage_plan, jobs, tmp_path
) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(two_stage_plan.to_dict()))
    ckpt = tmp_path / "ckpt"
    run = subprocess.Popen(
        [sys.executable, "-m", "heterps_core", "run", str(plan_file), "--model", "ctr_dnn",
         "--size", "tiny", "--steps", "4000", "--batch-size", "64", "--seed", "3",
         "--lr", "0.05", "--optimizer", "sgd", "--micro-batches", "4", "--sync", "bsp",
         "--checkpoint-dir", f"file://{ckpt}", "--checkpoint-every", "2000"],
        stderr=subprocess.PIPE, text=True,
    )
    assert run.stderr is not None
    line = run.stderr.readline()  # the first progress line: training runs
    while line and "step" not in line:
        line = run.stderr.readline()
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 75, err  # EX_TEMPFAIL: preempted, not bad input
    assert "heterps run: stopped: run stopped early at step " in err
    assert "(the coordinator got SIGTERM): complete checkpoint at step" in err
    (step,) = checkpoint.complete_steps(ckpt, 3)
    assert f"early at step {step} " in err
    # The manifest goes missing (a copy cut short): the resume is refused and says why.
    (Path(checkpoint.step_dir(ckpt, step)) / checkpoint.MANIFEST).unlink()
    train = replace(jobs.settings(step + 4), optimizer="sgd")
    with pytest.raises(RunConfigError, match=r"resume: no complete checkpoint in .* to resume "
                                             r"from: .* has no MANIFEST.json: it is incomplete"):
        Launcher(RunConfig(plan=two_stage_plan, train=train, checkpoint_dir=str(ckpt),
                           resume=True))


def test_the_drain_step_is_in_whole_rounds_ahead_of_the_furthest_started_step(jobs) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 3])  # rounds of 6
    spec = Launcher(RunConfig(plan=plan, train=jobs.settings(600))).spec
    assert liveness.drain_step(10, 0.0, spec) == 36  # at least 4 rounds ahead
    assert liveness.drain_step(10, 100.0, spec) == 312  # 3 s at 100 steps/s
    assert liveness.drain_step(10, 0.0, spec, tries=1) == 60  # a passed offer: twice the lead
    assert liveness.drain_step(10, 50.0, spec, tries=1) == 312
    assert liveness.drain_step(590, 100.0, spec) == 600  # never past the run's end


# --- start-up: the watchdog arms on the run's own first mini-batch ---------------------------

RESUMED_FROM = 4


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory, jobs) -> Path:
    """A 4-step run of two stages and a parameter-server shard, sealed at steps 2 and 4."""
    folder = tmp_path_factory.mktemp("saved")
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    launch(RunConfig(plan=plan, train=jobs.settings(RESUMED_FROM), checkpoint_dir=str(folder),
                     checkpoint_every=2))
    return folder


def resumed(saved: Path, folder: Path, jobs, **liveness: float) -> RunConfig:
    """A resume of `saved`'s run (copied into `folder`) to step 8, with short timeouts."""
    shutil.copytree(saved, folder)
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    return RunConfig(plan=plan, train=jobs.settings(8), checkpoint_dir=str(folder),
                     checkpoint_every=2, resume=True, report_interval_s=0.1, **liveness)


def stall_once_up(launcher: Launcher, rank: int, hold_s: float | None,
                  times: list[float]) -> threading.Thread:
    """SIGSTOP `rank` as soon as its heartbeat runs (start-up: before any mini-batch), and
    SIGCONT it `hold_s` later (None: never). Appends the times it stopped and continued."""
    pid = launcher.pids[rank]

    def stall() -> None:
        store = keys.connect(launcher.address)
        while not store.check([keys.where(rank)]):
            time.sleep(0.01)
        os.kill(pid, signal.SIGSTOP)
        times.append(time.monotonic())
        if hold_s is not None:
            time.sleep(hold_s)
            with contextlib.suppress(ProcessLookupError):  # the old code killed it already
                os.kill(pid, signal.SIGCONT)
            times.append(time.monotonic())

    thread = threading.Thread(target=stall, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_resumed_run_outlives_a_start_up_stall_longer_than_the_watchdog(
    saved_run, jobs, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IN_PROCESS_ENV, "0")  # the shard stalled is a process of its own
    # Reproduces issue 23.1: a resumed run's step starts at its checkpoint's, so the old
    # watchdog was armed from the start and killed a shard stalled before the first batch.
    config = resumed(saved_run, tmp_path / "ckpt", jobs, watchdog_s=2.0)
    first_batch_at: list[float] = []

    def note_first_batch(sample: MetricsSample) -> None:
        if sample.step > RESUMED_FROM and not first_batch_at:
            first_batch_at.append(time.monotonic())

    launcher = Launcher(config, sink=note_first_batch)
    launcher.start()
    times: list[float] = []
    thread = stall_once_up(launcher, 2, 3 * config.watchdog_s, times)
    try:
        result = launcher.wait()
    finally:
        thread.join()
    stopped, continued = times
    assert continued - stopped >= 3 * config.watchdog_s
    assert first_batch_at and first_batch_at[0] > continued  # the stall was in start-up
    assert result.start_step == RESUMED_FROM and len(result.losses) == 8 - RESUMED_FROM
    assert checkpoint.latest_complete(config.checkpoint_dir or "", 3) == 8


@pytest.mark.slow
def test_a_process_still_starting_after_the_start_up_timeout_is_named(
    saved_run, jobs, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IN_PROCESS_ENV, "0")  # the shard stalled is a process of its own
    # Every process is past the timeout (the others wait on the stopped one): the one
    # whose heartbeat stalled for the watchdog's time is named.
    config = resumed(saved_run, tmp_path / "ckpt", jobs, watchdog_s=2.0,
                     startup_timeout_s=8.0)
    launcher = Launcher(config)
    launcher.start()
    times: list[float] = []
    # Stopped before wait() starts the start-up clock, however slow the others' imports.
    stall_once_up(launcher, 2, None, times).join()
    with pytest.raises(RunError) as info:
        launcher.wait()
    message = str(info.value)
    assert message.startswith(f"parameter server shard 0 (rank 2) (pid {launcher.pids[2]} on "
                              ), message
    assert "still starting after " in message and "(start-up timeout 8 s): no heartbeat for " \
        in message, message
    assert "last complete checkpoint: step 4" in message
    assert jobs.live_processes_mentioning(launcher.address) == []


def test_a_process_says_its_start_up_is_over_through_its_heartbeat_thread() -> None:
    store = keys.serve()
    heartbeat = liveness.Heartbeat(f"127.0.0.1:{store.port}", 0, interval_s=0.05)
    time.sleep(0.3)  # a few beats
    assert store.check([keys.beat(0)]) and not store.check([keys.up(0)])
    heartbeat.up()
    deadline = time.monotonic() + 30.0  # generous: the thread writes it at its next beat
    while not store.check([keys.up(0)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.check([keys.up(0)])
