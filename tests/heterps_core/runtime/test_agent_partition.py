"""A machine cut off from the network mid-run (issue 23 item 3): its agent, on the far side
of a veth pair in a network namespace, must stop its job processes and itself within 30 s
and say why; the launcher names the machine it lost."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.launcher import Launcher, RunConfig
from tests.heterps_core.runtime.netns import Machine, machine
from tests.waiting import wait_until

AGENT_BOUND_S = 30.0  # the acceptance: agent and job processes gone this long after the cut


@pytest.fixture
def far() -> Iterator[Machine]:
    with machine() as m:
        yield m


def start_agent(m: Machine, address: str, log: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "heterps_core.runtime.agent", "--coordinator", address,
            "--provides", "cpu-b", "--name", "worker-b", "--join-timeout", "120"]
    return m.start(argv, env, log)


@pytest.mark.slow
def test_a_cut_off_machine_s_agent_stops_its_processes_and_itself_within_30_s(
    jobs, far: Machine, tmp_path, monkeypatch
) -> None:
    # Each side's interface named outright: this test is about the cut, not the choice of it.
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", far.outer)
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    steps: list[int] = []
    failure: list[BaseException] = []
    give_up = threading.Event()  # ends the run if the test fails before the cut does
    launcher = Launcher(
        RunConfig(plan=plan, train=jobs.settings(100_000), binding={"cpu-b": Target("remote")},
                  host=far.outer_ip, log_dir=str(tmp_path / "logs")),
        sink=lambda sample: steps.append(sample.step), cancel=give_up,
    )

    def wait() -> None:
        try:
            launcher.wait()
        except BaseException as exc:
            failure.append(exc)

    launcher.start()
    log = str(tmp_path / "agent.log")
    agent = start_agent(far, launcher.address, log, {**os.environ, "GLOO_SOCKET_IFNAME": far.inner})
    supervisor = threading.Thread(target=wait)
    supervisor.start()
    try:
        wait_until(lambda: steps and steps[-1] >= 5, 300, "training across the veth pair")
        job = [p for p in far.pids() if p != agent.pid]
        assert job, "the agent's job process runs in the far namespace"
        cut = time.monotonic()
        far.cut()
        try:
            agent.wait(AGENT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the agent still runs {AGENT_BOUND_S:g} s after the cut")
        wait_until(lambda: not far.pids(), AGENT_BOUND_S - (time.monotonic() - cut),
                   "the job processes on the cut machine to be gone")
        gone_s = time.monotonic() - cut
        supervisor.join(60)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        give_up.set()
        supervisor.join(60)
    said = Path(log).read_text()
    print(f"gone {gone_s:.1f} s after the cut; agent: {said.strip().splitlines()[-1]}; "
          f"launcher: {failure}")
    assert agent.returncode != 0
    assert f"lost the coordinator {launcher.address}: no answer for" in said, said[-2000:]
    # Its job process, blocked in a gloo receive from the other side, was killed.
    assert "stopped its job processes: rank 1 was killed by SIG" in said, said[-2000:]
    assert len(failure) == 1 and isinstance(failure[0], RunError), failure
    assert "machine worker-b (agent 0) was lost" in str(failure[0])
