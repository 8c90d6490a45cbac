"""The worker agent of a worker machine: joins a job's rendezvous store and runs the stage
processes the launcher gives it. The launcher's half of the protocol (hand agents their
ranks, read their exit reports) is `assignment.py`.

    python -m heterps_core.runtime.agent --coordinator HOST:PORT --provides cpu,gpu-v100 \\
        [--bind gpu-v100=cuda:0] [--name NAME]

Contract (docs/operations.md; keys in heterps_core.rendezvous): the agent registers
`agents/I` = {"name", "provides"} in the store, waits for `agents/I/ranks` (a JSON list,
possibly empty; written by `assignment.assign`), starts one worker process per rank, writes
`exit/RANK` = exit code as each ends (read by `exit_of`), and kills its processes when the
launcher sets `control/stop` or the store goes away. It advances `agents/I/beat` every
0.5 s and sets `agents/I/done` when it ends on purpose, so the launcher tells a lost
machine from a finished one (runtime/liveness.py). SIGTERM (a spot notice) sets
`control/drain`: the launcher has every stage checkpoint and end, and the agent exits once
its processes have. One agent serves one job.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta

import torch.distributed as dist

from heterps_core import processes
from heterps_core import rendezvous as keys
from heterps_core.errors import HeterPSError
from heterps_core.runtime.assignment import resource_of
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.liveness import BEAT_S
from heterps_core.runtime.spec import WORKER_MODULE, JobSpec

POLL_S = 0.05


def join(coordinator: str, timeout_s: float) -> dist.TCPStore:
    """Connect to the coordinator's store, retrying until it is up or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return keys.connect(coordinator, timeout=timedelta(seconds=max(1.0, timeout_s)))
        except (RuntimeError, OSError) as exc:  # not listening yet
            if time.monotonic() > deadline:
                raise HeterPSError(f"cannot reach coordinator {coordinator}: {exc}") from None
            time.sleep(0.2)


def run_agent(
    coordinator: str,
    provides: Sequence[str],
    name: str = "",
    bind: str | None = None,
    join_timeout_s: float = 60.0,
    stop: threading.Event | None = None,
) -> int:
    """Serve one job; returns 0 when all its processes succeeded (or it got none), else 1."""
    host, _ = keys.parse_address(coordinator)
    targets = parse_binding(bind, provides)
    named = {item.partition("=")[0].strip() for item in (bind or "").split(",")}
    store = join(coordinator, join_timeout_s)
    index = int(store.add(keys.AGENTS_JOINED, 1)) - 1
    name = name or f"{socket.gethostname()}-{os.getpid()}"
    store.set(keys.agent(index), json.dumps({"name": name, "provides": list(provides)}))
    key = keys.agent_ranks(index)
    deadline = time.monotonic() + join_timeout_s
    beat = _Beat(store, index)
    while not store.check([key]):
        if store.check([keys.STOP]) or (stop and stop.is_set()) or time.monotonic() > deadline:
            return _done(store, index, 0)
        beat.tick()
        time.sleep(POLL_S)
    ranks: list[int] = json.loads(store.get(key))
    if not ranks:
        return _done(store, index, 0)
    spec = JobSpec.from_json(store.get(keys.SPEC).decode())
    env = processes.child_env(loopback=host in ("127.0.0.1", "localhost"))
    procs = {}
    for rank in ranks:
        resource = resource_of(spec, spec.ranks[rank])
        # Without a local binding the worker follows the job's target (remote -> cpu,
        # remote:cuda -> cuda:0), so both ends of every link agree on its device.
        device = ["--device", str(targets[resource])] if resource in named else []
        args = ["--store", coordinator, "--rank", str(rank), *device]
        procs[rank] = processes.spawn(WORKER_MODULE, args, env)
    return _done(store, index, _supervise(store, procs, stop, beat, name))


class _Beat:
    """The agent's heartbeat (runtime/liveness.py), advanced from its supervision loop."""

    def __init__(self, store: dist.TCPStore, index: int) -> None:
        self.store = store
        self.key = keys.agent_beat(index)
        self.last = 0.0

    def tick(self) -> None:
        if time.monotonic() - self.last >= BEAT_S:
            self.store.add(self.key, 1)
            self.last = time.monotonic()


def _done(store: dist.TCPStore, index: int, code: int) -> int:
    """Say this agent ended on purpose (its heartbeat stops next), then return `code`."""
    with contextlib.suppress(RuntimeError, OSError):  # the coordinator may be gone
        store.set(keys.agent_done(index), str(code))
    return code


def _supervise(
    store: dist.TCPStore, procs: dict[int, subprocess.Popen[bytes]],
    stop: threading.Event | None, beat: _Beat, name: str,
) -> int:
    codes: dict[int, int] = {}
    drained = False
    try:
        while len(codes) < len(procs):
            for rank, proc in procs.items():
                if rank not in codes and (code := proc.poll()) is not None:
                    codes[rank] = code
                    store.set(keys.exit_code(rank), str(code))
            if store.check([keys.STOP]) or (stop and stop.is_set()):
                break
            if _terminated.is_set() and not drained:
                # A spot notice: ask the launcher for a final checkpoint; the processes
                # keep running until they have written it and ended.
                store.set(keys.DRAIN, f"machine {name} got SIGTERM")
                drained = True
            beat.tick()
            time.sleep(POLL_S)
    except (RuntimeError, OSError):
        pass  # the coordinator is gone: nothing to report to, stop the job's processes
    finally:
        processes.stop_all(procs.values())
    return 0 if all(proc.returncode == 0 for proc in procs.values()) else 1


# Set by the SIGTERM handler `main` installs (a machine's spot notice).
_terminated = threading.Event()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m heterps_core.runtime.agent")
    parser.add_argument("--coordinator", required=True, help="the job's rendezvous store HOST:PORT")
    parser.add_argument("--provides", required=True, help="comma-separated resource types")
    parser.add_argument("--bind", help="local targets per type, e.g. gpu-v100=cuda:0 (default cpu)")
    parser.add_argument("--name", default="", help="how the launcher names this machine")
    parser.add_argument("--join-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    provides = [p.strip() for p in args.provides.split(",") if p.strip()]
    # A spot notice (SIGTERM) drains the job: a final checkpoint, then every process ends.
    signal.signal(signal.SIGTERM, lambda *_: _terminated.set())
    try:
        return run_agent(args.coordinator, provides, args.name, args.bind, args.join_timeout)
    except HeterPSError as exc:
        print(f"heterps agent: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
