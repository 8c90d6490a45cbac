"""An agent's calls to its coordinator answer within the lifeline's patience, even when the
coordinator stops answering without closing anything (here: its process is SIGSTOPped; the
cut network itself is test_agent_partition.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heterps_core import rendezvous as keys
from heterps_core.runtime.lifeline import CoordinatorLost, Lifeline

SERVE = """
import sys, time
from heterps_core import rendezvous
store = rendezvous.serve("127.0.0.1", 0)
print(store.port, flush=True)
time.sleep(600)
"""


def stopped(pid: int) -> bool:
    """The process is in the stopped state (T in /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def test_a_coordinator_that_stops_answering_is_lost_after_the_patience() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVE], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        address = f"127.0.0.1:{server.stdout.readline().strip()}"
        line = Lifeline(keys.connect(address), address, patience_s=1.0)
        assert line.call(lambda s: s.add("beat", 1)) == 1
        server.send_signal(signal.SIGSTOP)
        # A stop is delivered asynchronously: on a loaded machine the server answered one
        # more call before it took effect (CI, stop 31).
        deadline = time.monotonic() + 10
        while not stopped(server.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stopped(server.pid)
        started = time.monotonic()
        with pytest.raises(CoordinatorLost, match=rf"^lost the coordinator {address}: "
                                                  r"no answer for \d+ s$"):
            line.call(lambda s: s.add("beat", 1))
        assert time.monotonic() - started < 5.0
        # Once lost, every call says so at once: nothing waits on the blocked thread again.
        started = time.monotonic()
        with pytest.raises(CoordinatorLost):
            line.call(lambda s: s.check(["beat"]))
        assert time.monotonic() - started < 0.5
    finally:
        server.send_signal(signal.SIGCONT)
        server.kill()
        server.wait()


def test_a_coordinator_whose_process_is_gone_is_lost_with_the_reason() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVE], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    address = f"127.0.0.1:{server.stdout.readline().strip()}"
    line = Lifeline(keys.connect(address), address, patience_s=10.0)
    server.kill()
    server.wait()
    started = time.monotonic()
    with pytest.raises(CoordinatorLost, match=rf"^lost the coordinator {address}: "):
        line.call(lambda s: s.add("beat", 1))
    assert time.monotonic() - started < 10.0
