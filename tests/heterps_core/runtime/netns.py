"""A second "machine" for runtime tests: a network namespace joined to this one by a veth pair.

The launcher runs in the test's own (root) namespace, an agent inside the namespace; the
pair has private addresses of its own (10.231.X.1 here, 10.231.X.2 there, X from the test
process's pid so parallel runs do not clash). `cut()` takes this side's end down: packets to
the other side vanish, nothing answers and nothing resets a connection, as when a machine
drops off the network. Needs root (`ip netns`); `machine()` skips the test otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pytest


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@dataclass(frozen=True)
class Machine:
    ns: str
    outer: str  # the veth end in the test's namespace
    inner: str  # the veth end inside `ns`
    outer_ip: str
    inner_ip: str

    def start(self, argv: Sequence[str], env: Mapping[str, str],
              log: str) -> subprocess.Popen[bytes]:
        """`argv` inside the namespace (`ip netns exec` execs it: the pid is the program's),
        stdout and stderr into the file `log`."""
        with open(log, "wb") as out:
            return subprocess.Popen(["ip", "netns", "exec", self.ns, *argv], env=dict(env),
                                    stdout=out, stderr=subprocess.STDOUT)

    def pids(self) -> list[int]:
        """Live processes inside the namespace."""
        out = _ip("netns", "pids", self.ns, check=False).stdout.split()
        return [int(p) for p in out if p.isdigit() and _alive(int(p))]

    def cut(self) -> None:
        _ip("link", "set", self.outer, "down")


def _free_subnet(pid: int) -> str:
    """10.231.X (a /24) that no interface here uses yet, starting from the pid's slot."""
    used = _ip("-o", "-4", "addr", "show", check=False).stdout
    for step in range(250):
        net = f"10.231.{(pid + step) % 250 + 1}"
        if f" {net}." not in used:
            return net
    pytest.skip("every 10.231.X/24 subnet is in use here")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def machine(tag: str = "") -> Iterator[Machine]:
    """A fresh namespace + veth pair, removed afterwards with anything still running in it."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2 (`ip netns`)")
    pid = os.getpid()
    net = _free_subnet(pid)
    m = Machine(f"hps{tag}{pid}", f"hpo{tag}{pid}", f"hpi{tag}{pid}", f"{net}.1", f"{net}.2")
    made = _ip("netns", "add", m.ns, check=False)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` is not usable here: {made.stderr.strip()}")
    try:
        for args in (
            ["link", "add", m.outer, "type", "veth", "peer", "name", m.inner],
            ["link", "set", m.inner, "netns", m.ns],
            ["addr", "add", f"{m.outer_ip}/24", "dev", m.outer],
            ["link", "set", m.outer, "up"],
            ["-n", m.ns, "addr", "add", f"{m.inner_ip}/24", "dev", m.inner],
            ["-n", m.ns, "link", "set", m.inner, "up"],
            ["-n", m.ns, "link", "set", "lo", "up"],
        ):
            done = _ip(*args, check=False)
            if done.returncode != 0:
                pytest.skip(f"`ip {' '.join(args)}` failed here: {done.stderr.strip()}")
        yield m
    finally:
        for pid_left in m.pids():
            with contextlib.suppress(OSError):
                os.kill(pid_left, signal.SIGKILL)
        _ip("link", "del", m.outer, check=False)  # takes its peer with it
        _ip("netns", "del", m.ns, check=False)
