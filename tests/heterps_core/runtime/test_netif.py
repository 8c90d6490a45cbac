"""The interface gloo uses (issue 23 item 6): chosen from the route to the coordinator when
GLOO_SOCKET_IFNAME is unset, said aloud, and named when gloo cannot connect."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from heterps_core.runtime import netif
from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.failures import gloo_hint, is_gloo_connection_error
from heterps_core.runtime.launcher import Launcher, RunConfig
from tests.heterps_core.runtime.netns import Machine, machine

IF_INET6 = """\
00000000000000000000000000000001 01 80 10 80       lo
fe80000000000000020c29fffe8a1b2c 02 40 20 80     eth0
fd000000000000000000000000000002 02 40 00 80     eth0
"""


def test_ipv6_addresses_are_read_per_interface() -> None:
    assert netif.parse_if_inet6(IF_INET6) == {
        "lo": ["::1"], "eth0": ["fe80::20c:29ff:fe8a:1b2c", "fd00::2"]}
    assert netif.parse_if_inet6("garbage\n") == {}


def test_the_interface_holding_an_address_is_found_whatever_its_spelling() -> None:
    held = {"lo": ["127.0.0.1", "::1"], "veth-b": ["10.231.0.2", "fe80::1"]}
    assert netif.holder("10.231.0.2", held) == "veth-b"
    assert netif.holder("fe80:0::1%veth-b", held) == "veth-b"
    assert netif.holder("10.231.0.9", held) is None


def test_a_set_gloo_socket_ifname_wins_and_loopback_routes_through_lo() -> None:
    assert netif.for_coordinator("10.9.9.9", {netif.ENV: "eth7"}) == netif.GlooInterface(
        "eth7", "GLOO_SOCKET_IFNAME as set")
    # The real kernel's choice on this machine: the coordinator on loopback is reached on lo.
    assert netif.for_coordinator("127.0.0.1", {}) == netif.GlooInterface(
        "lo", "127.0.0.1, the coordinator's own address")


def test_the_choice_is_said_in_one_line() -> None:
    chosen = netif.GlooInterface("veth-b", "10.231.0.2, the route to 10.231.0.1")
    assert netif.announce(chosen, "10.231.0.1") == (
        "gloo: using interface veth-b (10.231.0.2, the route to 10.231.0.1)")
    assert "GLOO_SOCKET_IFNAME left unset" in netif.announce(None, "10.231.0.1")


def test_a_gloo_connection_error_gets_a_hint_naming_each_machine_s_interface() -> None:
    said = ("RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:152]"
            " timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:18306$1")
    assert is_gloo_connection_error(said)
    assert not is_gloo_connection_error("ValueError: bad shape")
    hint = gloo_hint([("the launcher's machine", "eth0 (10.0.0.1, the default route)"),
                      ("machine worker-b", "")])
    assert hint == (
        " [gloo could not connect; interfaces used: the launcher's machine: eth0 (10.0.0.1, "
        "the default route); machine worker-b: no GLOO_SOCKET_IFNAME (the address of its host "
        "name). Set GLOO_SOCKET_IFNAME on each machine to the interface that reaches the "
        "others]")


# --- two machines: the launcher here, an agent in a network namespace ----------------------


@pytest.fixture
def far() -> Iterator[Machine]:
    with machine("g") as m:
        yield m


def _two_machine_run(jobs, far: Machine, tmp_path: Path, agent_env: dict[str, str],
                     steps: int) -> tuple[object, str, subprocess.Popen[bytes]]:
    """A two-stage run, stage 2 on the far machine's agent: (result or error, agent log, agent)."""
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    give_up = threading.Event()  # a run that hangs on gloo's own timeout ends here instead
    launcher = Launcher(RunConfig(plan=plan, train=jobs.settings(steps),
                                  binding={"cpu-b": Target("remote")}, host=far.outer_ip,
                                  log_dir=str(tmp_path / "logs")), cancel=give_up)
    launcher.start()
    log = tmp_path / "agent.log"
    argv = [sys.executable, "-m", "heterps_core.runtime.agent", "--coordinator",
            launcher.address, "--provides", "cpu-b", "--name", "worker-b"]
    agent = far.start(argv, agent_env, str(log))
    timer = threading.Timer(240, give_up.set)
    timer.start()
    try:
        try:
            outcome: object = launcher.wait()
        except Exception as exc:  # the caller reads it
            outcome = exc
        agent.wait(60)
    finally:
        timer.cancel()
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    return outcome, log.read_text(), agent


@pytest.mark.slow
def test_a_run_across_two_machines_trains_without_gloo_socket_ifname(
    jobs, far: Machine, tmp_path, monkeypatch, capfd
) -> None:
    monkeypatch.delenv(netif.ENV, raising=False)
    env = {k: v for k, v in os.environ.items() if k != netif.ENV}
    result, said, agent = _two_machine_run(jobs, far, tmp_path, env, steps=8)
    assert not isinstance(result, Exception), f"{result}\n{said[-3000:]}"
    assert len(result.losses) == 8  # type: ignore[attr-defined]
    assert agent.returncode == 0
    assert (f"heterps agent worker-b: gloo: using interface {far.inner} ({far.inner_ip}, "
            f"the route to {far.outer_ip})") in said
    assert (f"heterps launcher: gloo: using interface {far.outer} ({far.outer_ip}, the "
            f"coordinator's own address)") in capfd.readouterr().err


@pytest.mark.slow
def test_a_gloo_connection_failure_names_the_interface_and_the_machine(
    jobs, far: Machine, tmp_path, monkeypatch
) -> None:
    # Both machines' gloo told to use loopback (what a host name in /etc/hosts as 127.0.0.1
    # amounts to): each tells the other to dial 127.0.0.1, which is itself.
    monkeypatch.setenv(netif.ENV, "lo")
    failure, _, _ = _two_machine_run(jobs, far, tmp_path, {**os.environ}, steps=8)
    assert isinstance(failure, RunError), failure
    message = str(failure)
    print(message)
    assert "Gloo connectFullMesh failed" in message, message
    assert ("interfaces used: the launcher's machine: lo (GLOO_SOCKET_IFNAME as set); machine "
            "worker-b: lo (GLOO_SOCKET_IFNAME as set). Set GLOO_SOCKET_IFNAME on each machine "
            "to the interface that reaches the others]") in message, message
