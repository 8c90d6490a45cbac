"""Child processes of both executors: spawn a module, stop them all, say how one ended.

The pipeline launcher, its worker agents and the data-parallel process backend start
fresh interpreters (`python -m MODULE`, never a fork of the caller: safe whatever threads
the caller runs, and the caller's script is never re-imported) that die with their parent,
and stop them the same way: SIGTERM, a grace period, then SIGKILL. The launcher forks its
job processes from a template process instead where it can (`runtime/template.py`); what it
gets back is a `Process` like a Popen, so stopping works the same.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
STOP_GRACE_S = 2.0

# A cancel request: an event, or a callable polled by the executor.
CancelHook = threading.Event | Callable[[], bool]


class Process(Protocol):
    """What the executors use of a child process: a Popen, or a template's `ForkedProcess`."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...


def cancelled(hook: CancelHook | None) -> bool:
    if hook is None:
        return False
    return hook.is_set() if isinstance(hook, threading.Event) else bool(hook())


def child_env(
    extra: Mapping[str, str] | None = None, loopback: bool = False,
    gloo_interface: str | None = None,
) -> dict[str, str]:
    """This process's environment with the project importable; gloo on `gloo_interface`
    (`loopback`: lo) unless GLOO_SOCKET_IFNAME is set already (runtime/netif.py picks it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    interface = "lo" if loopback else gloo_interface
    if interface and not env.get("GLOO_SOCKET_IFNAME"):
        env["GLOO_SOCKET_IFNAME"] = interface
    env.update(extra or {})
    return env


def spawn(
    module: str,
    args: Sequence[str],
    env: Mapping[str, str],
    log: IO[bytes] | None = None,
) -> subprocess.Popen[bytes]:
    """`python -m module args...`, killed when this process dies (Linux PR_SET_PDEATHSIG)."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
        env=dict(env),
        preexec_fn=die_with_parent,
    )


def stop_all(procs: Iterable[Process], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM every live process, wait up to `grace_s` in all, then SIGKILL what is left."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def exit_text(code: int, numeric: bool = False) -> str:
    """How a process ended, as the end of a sentence: 'was killed by SIGKILL (exit code -9)'
    (`numeric`: 'was killed by signal 9', the data-parallel backend's wording)."""
    if code < 0:
        if numeric:
            return f"was killed by signal {-code}"
        try:
            return f"was killed by {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            return f"was killed by signal {-code} (exit code {code})"
    return f"exited with code {code}"


def die_with_parent() -> None:
    # Linux: the child gets SIGKILL when its parent dies, so no job outlives its launcher.
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
