"""Two "machines" on loopback: two agent processes, each providing one resource type."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.launcher import Launcher, RunConfig
from heterps_core.runtime.reference import train_plain


def start_agent(
    address: str, provides: str, name: str, bind: str | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "heterps_core.runtime.agent",
            "--coordinator",
            address,
            "--provides",
            provides,
            "--name",
            name,
            "--join-timeout",
            "60",
            *(["--bind", bind] if bind else []),
        ],
    )


@pytest.mark.slow
def test_stages_run_on_two_agent_machines_and_match_the_plain_loop(jobs) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    remote = {"cpu": Target("remote"), "cpu-b": Target("remote")}
    # Two parameter-server shards (rows g mod 2) also check that sharding keeps the numbers.
    launcher = Launcher(RunConfig(plan=plan, train=jobs.settings(20), binding=remote, ps_shards=2))
    launcher.start()
    assert list(launcher.pids) == [2, 3]  # only the parameter servers run at the coordinator
    agents = [
        start_agent(launcher.address, "cpu", "machine-a"),
        start_agent(launcher.address, "cpu-b", "machine-b"),
    ]
    try:
        result = launcher.wait()
        assert [a.wait(30) for a in agents] == [0, 0]
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
    plain = train_plain(jobs.settings(20))
    assert torch.allclose(torch.tensor(result.losses), torch.tensor(plain.losses), atol=1e-5)
    assert result.binding == {"cpu": "remote", "cpu-b": "remote"}
    assert jobs.live_processes_mentioning(launcher.address) == []


def test_a_job_without_its_agents_fails_with_the_missing_types(jobs) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    launcher = Launcher(
        RunConfig(
            plan=plan,
            train=jobs.settings(4),
            binding={"cpu-b": Target("remote")},
            agent_timeout_s=0.5,
        )
    )
    with pytest.raises(RunError, match=r"no worker agent for cpu-b joined within 0.5 s"):
        launcher.run()
    assert jobs.live_processes_mentioning(launcher.address) == []


@pytest.mark.slow
def test_a_failing_remote_process_is_named_with_its_agent_s_machine(jobs) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    launcher = Launcher(RunConfig(plan=plan, train=jobs.settings(4),
                                  binding={"cpu-b": Target("remote")}))
    launcher.start()
    # The job runs cpu-b on the CPU; this machine binds it to a GPU, so its stage refuses.
    agent = start_agent(launcher.address, "cpu-b", "machine-b", bind="cpu-b=cuda:0")
    try:
        with pytest.raises(RunError) as failed:
            launcher.wait()
        assert agent.wait(30) == 1
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert re.match(r"stage 2 replica 0 \(rank 1\) \(machine machine-b, pid \d+ on \S+\) "
                    r"exited with code 1: RuntimeError: stage 2 replica 0 \(rank 1\) must run on "
                    r"the CPU", str(failed.value)), str(failed.value)
