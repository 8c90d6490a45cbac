"""Production shape of a multi-machine run: agents reach their machines through Celery on Redis.

Two separate `celery -A workers worker` processes play two worker machines, one consuming
the queue of resource type A, the other that of type B (names unique per test run, so a
worker left running elsewhere cannot take the tasks). Skipped when Redis does not answer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from celery import Celery
from celery.result import allow_join_result

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement
from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.launcher import Launcher, RunConfig
from heterps_core.runtime.reference import train_plain
from heterps_core.runtime.spec import TrainSettings
from webapp import environment
from workers.agents import (
    AgentFailed,
    agents_per_type,
    coordinator_address,
    dispatch_agents,
    queue_for,
    remote_units,
    serving,
)

REPO = Path(__file__).resolve().parents[2]
BATCH = 64


def test_queue_names_follow_the_resource_type() -> None:
    assert queue_for("gpu-v100") == "heterps.res.gpu-v100"
    with pytest.raises(ValueError, match="resource_type"):
        queue_for(" ")


def test_one_agent_per_type_unless_asked_to_spread_over_more_machines() -> None:
    assert agents_per_type(["cpu-a", "cpu-b"], spread=1) == {"cpu-a": 1, "cpu-b": 1}
    assert agents_per_type({"gpu": 8, "cpu": 1}, spread=1) == {"gpu": 1, "cpu": 1}
    assert agents_per_type({"gpu": 8, "cpu": 1}, spread=3) == {"gpu": 3, "cpu": 1}
    with pytest.raises(ValueError, match=r"remote_types\.gpu: units must be a positive"):
        agents_per_type({"gpu": 0}, spread=1)
    with pytest.raises(ValueError, match="spread"):
        agents_per_type(["gpu"], spread=0)


def test_agents_dial_a_reachable_host_when_the_store_listens_everywhere() -> None:
    assert coordinator_address("127.0.0.1:29400", "127.0.0.1") == "127.0.0.1:29400"
    assert coordinator_address("127.0.0.1:29400", "0.0.0.0", "ps-1.lan") == "ps-1.lan:29400"
    host = coordinator_address("127.0.0.1:29400", "0.0.0.0")
    assert host == f"{socket.gethostname()}:29400"


def test_remote_units_count_only_the_stage_processes_bound_to_remote(tmp_path: Path) -> None:
    plan, logs = _plan(["cpu-a", "cpu-b"]), str(tmp_path)
    spec = Launcher(
        RunConfig(
            plan=plan,
            train=_settings(4),
            binding={"cpu-b": Target("remote")},
            ps_shards=2,
            log_dir=logs,
        )
    ).spec
    assert remote_units(spec) == {"cpu-b": 1}  # not cpu-a's stage, not the two PS shards
    assert remote_units(Launcher(RunConfig(plan=plan, train=_settings(4), log_dir=logs)).spec) == {}
    # A plan that places the server on a type bound to remote sends its shards to agents too.
    placed = replace(plan, parameter_server=ServerPlacement("cpu-ps", 2, 0.001, 1e6, 0.5, 0.1))
    binding = {"cpu-b": Target("remote"), "cpu-ps": Target("remote")}
    spec = Launcher(RunConfig(plan=placed, train=_settings(4), binding=binding, ps_shards=2,
                              log_dir=logs)).spec
    assert remote_units(spec) == {"cpu-b": 1, "cpu-ps": 2}


def _plan(types: list[str]) -> Plan:
    """Two stages (embedding on type 0, the dense layers on type 1), one unit each."""
    assignment = [types[0], types[1], types[1], types[1]]
    compute = [0.09, 0.03, 0.03, 0.03]  # at 640 samples/s with batch 64: 0.1 s per unit
    instance = Instance.from_dict(
        {
            "version": 1,
            "batch_size": BATCH,
            "throughput_target": 640.0,
            "resources": [
                {
                    "name": t,
                    "kind": "cpu",
                    "price_per_hour": 0.5 + i,
                    "count": 8,
                    "memory_gb": 64,
                    "network_gbps": 100_000,  # the documented maximum
                }
                for i, t in enumerate(types)
            ],
            "layers": [
                {
                    "name": f"l{i}",
                    "kind": "embedding" if i == 0 else "dense",
                    "compute_s": dict.fromkeys(types, compute[i]),
                    "output_mb": 0.01,
                    "sync_mb": 0.01,
                    "memory_gb": 0.1,
                    "shardable": i == 0,
                }
                for i in range(4)
            ],
        }
    )
    plan = evaluate(instance, assignment)
    assert plan.feasible and [s.units for s in plan.stages] == [1, 1], plan
    return plan


def _settings(steps: int) -> TrainSettings:
    return TrainSettings(
        model="ctr_dnn",
        size="tiny",
        steps=steps,
        batch_size=BATCH,
        seed=3,
        lr=0.05,
        micro_batches=4,
        sync="bsp",
    )


def _client(redis_url: str) -> Celery:
    options = environment.celery_settings({"REDIS_URL": redis_url})
    client = Celery("heterps-test-client")
    client.conf.update({k.removeprefix("CELERY_").lower(): v for k, v in options.items()})
    return client


def _start_machine(redis_url: str, resource: str, home: Path) -> subprocess.Popen[bytes]:
    """A worker machine as an operator starts it (`make worker QUEUES=heterps.res.TYPE`)."""
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env |= {"REDIS_URL": redis_url, "HETERPS_VAR_DIR": str(home)}
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers",
        "worker",
        "--concurrency",
        "1",
        "--queues",
        queue_for(resource),
        "--hostname",
        f"{resource}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        "INFO",
    ]
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=(home / "worker.log").open("wb"),
        stderr=subprocess.STDOUT,
    )


def _wait_or_kill(machine: subprocess.Popen[bytes]) -> None:
    try:
        machine.wait(20)
    except subprocess.TimeoutExpired:
        machine.kill()
        machine.wait()


@pytest.fixture(scope="module")
def machines(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory,
    live_processes: Callable[[str], list[int]],
) -> Iterator[tuple[Celery, list[str]]]:
    """Two machines shared by this module's tests: starting a Celery worker takes seconds."""
    tag = uuid.uuid4().hex[:8]
    types = [f"cpu-a-{tag}", f"cpu-b-{tag}"]
    home = tmp_path_factory.mktemp("machines")
    started = [_start_machine(redis_url, t, home / t) for t in types]
    yield _client(redis_url), types
    for machine in started:
        machine.terminate()  # warm shutdown, both at once; the pool children exit with it
    for machine in started:
        _wait_or_kill(machine)
    assert live_processes(f"-{tag}@") == []


@pytest.mark.slow  # two agent machines (Celery workers) start for it: about 15 s
@pytest.mark.production
def test_serving_names_the_types_a_live_worker_takes_agents_for(
    machines: tuple[Celery, list[str]],
) -> None:
    # What the approve form asks before it accepts a `remote` binding (issue 17 item 3).
    client, types = machines
    deadline = time.monotonic() + 90  # the two machines may still be starting
    while (found := serving([*types, "nobody-serves-this"], celery_app=client)) != set(types):
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    assert found == set(types)


@pytest.mark.production
@pytest.mark.slow
def test_remote_stages_run_on_two_celery_machines_and_match_the_plain_loop(
    machines: tuple[Celery, list[str]], tmp_path: Path, live_processes: Callable[[str], list[int]]
) -> None:
    client, types = machines
    remote = {t: Target("remote") for t in types}
    launcher = Launcher(
        RunConfig(plan=_plan(types), train=_settings(20), binding=remote, log_dir=str(tmp_path))
    )
    launcher.start()
    units = remote_units(launcher.spec)
    assert units == {t: 1 for t in types}
    results = dispatch_agents(launcher.address, units, celery_app=client)
    try:
        result = launcher.wait()
        with allow_join_result():  # this test is a client, not a task
            codes = [r.get(timeout=30) for r in results]
    finally:
        for r in results:
            r.forget()
    assert codes == [0, 0]
    assert len(result.losses) == 20
    plain = train_plain(_settings(20))
    assert torch.allclose(torch.tensor(result.losses), torch.tensor(plain.losses), atol=1e-5)
    assert result.binding == {t: "remote" for t in types}
    deadline = time.monotonic() + 5  # agents reap their workers before acking the result
    while live_processes(launcher.address) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_processes(launcher.address) == []


@pytest.mark.production
@pytest.mark.slow
def test_an_agent_that_cannot_reach_its_coordinator_fails_with_a_readable_error(
    machines: tuple[Celery, list[str]],
) -> None:
    client, types = machines
    # Nothing listens on port 1: the agent gives up after its join timeout.
    (result,) = dispatch_agents("127.0.0.1:1", [types[0]], join_timeout=0.5, celery_app=client)
    with allow_join_result(), pytest.raises(AgentFailed) as failure:
        result.get(timeout=30)
    result.forget()
    message = str(failure.value)
    assert f"for {types[0]} at 127.0.0.1:1" in message
    assert "cannot reach coordinator 127.0.0.1:1" in message


@pytest.mark.production
@pytest.mark.slow
def test_a_failing_stage_process_fails_the_run_and_the_agent_result(
    machines: tuple[Celery, list[str]], tmp_path: Path, live_processes: Callable[[str], list[int]]
) -> None:
    client, types = machines
    launcher = Launcher(
        RunConfig(
            plan=_plan(types),
            train=_settings(4),
            binding={types[1]: Target("remote")},
            log_dir=str(tmp_path),
        )
    )
    launcher.start()
    # The machine's bind says cuda:0 for a job whose target is the CPU (`remote`): the stage
    # process refuses it, since every end of a link must agree on its device.
    (agent,) = dispatch_agents(
        launcher.address, remote_units(launcher.spec), bind={types[1]: "cuda:0"}, celery_app=client
    )
    with pytest.raises(RunError, match=r"rank 1\) must run on the CPU .* bound it to cuda:0"):
        launcher.wait()
    with allow_join_result(), pytest.raises(AgentFailed) as failure:
        agent.get(timeout=30)
    agent.forget()
    assert f"for {types[1]} at {launcher.address}: a stage process exited" in str(failure.value)
    assert live_processes(launcher.address) == []
