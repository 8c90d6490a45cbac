"""The worker agent of a worker machine: joins a job's rendezvous store and runs the stage
processes the launcher gives it. The launcher's half of the protocol (hand agents their
ranks, read their exit reports) is `assignment.py`.

    python -m heterps_core.runtime.agent --coordinator HOST:PORT --provides cpu,gpu-v100 \\
        [--bind gpu-v100=cuda:0] [--name NAME]

Contract (docs/operations.md; keys in heterps_core.rendezvous): the agent registers
`agents/I` = {"name", "provides", "gloo"} in the store, waits for `agents/I/ranks` (a JSON
list, possibly empty; written by `assignment.assign`), starts one worker process per rank
(gloo on the interface towards the coordinator: netif.py), writes `exit/RANK` = exit code as
each ends (read by `exit_of`), and kills its processes when the launcher sets
`control/stop`, or when the coordinator stops answering: every store call goes through
`Lifeline` (lifeline.py), so a cut network ends the agent within its patience (10 s)
instead of the minutes a blocked store call takes. It advances `agents/I/beat` every
0.5 s and sets `agents/I/done` when it ends on purpose, so the launcher tells a lost
machine from a finished one (runtime/liveness.py). SIGTERM (a spot notice) sets
`control/drain`: the launcher has every stage checkpoint and end, and the agent exits once
its processes have. One agent serves one job.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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
from heterps_core.runtime import netif
from heterps_core.runtime.assignment import resource_of
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.lifeline import CoordinatorLost, Lifeline
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
    """Serve one job; returns 0 when all its processes succeeded (or it got none), else 1.
    Raises `CoordinatorLost` once its job processes are stopped when the coordinator stops
    answering (lifeline.py: within PATIENCE_S)."""
    host, _ = keys.parse_address(coordinator)
    targets = parse_binding(bind, provides)
    named = {item.partition("=")[0].strip() for item in (bind or "").split(",")}
    name = name or f"{socket.gethostname()}-{os.getpid()}"
    gloo = netif.choose(host, f"heterps agent {name}")
    line = Lifeline(join(coordinator, join_timeout_s), coordinator)
    try:
        index = int(line.call(lambda s: s.add(keys.AGENTS_JOINED, 1))) - 1
        record = {"name": name, "provides": list(provides),
                  "gloo": gloo.describe() if gloo else ""}
        line.call(lambda s: s.set(keys.agent(index), json.dumps(record)))
        key = keys.agent_ranks(index)
        deadline = time.monotonic() + join_timeout_s
        beat = _Beat(line, index)
        while not line.call(lambda s: s.check([key])):
            if (line.call(lambda s: s.check([keys.STOP])) or (stop and stop.is_set())
                    or time.monotonic() > deadline):
                return _done(line, index, 0)
            beat.tick()
            time.sleep(POLL_S)
        ranks: list[int] = json.loads(line.call(lambda s: s.get(key)))
        if not ranks:
            return _done(line, index, 0)
        spec = JobSpec.from_json(line.call(lambda s: s.get(keys.SPEC)).decode())
        env = processes.child_env(gloo_interface=gloo.name if gloo else None)
        procs = {}
        for rank in ranks:
            resource = resource_of(spec, spec.ranks[rank])
            # Without a local binding the worker follows the job's target (remote -> cpu,
            # remote:cuda -> cuda:0), so both ends of every link agree on its device.
            device = ["--device", str(targets[resource])] if resource in named else []
            args = ["--store", coordinator, "--rank", str(rank), *device]
            procs[rank] = processes.spawn(WORKER_MODULE, args, env)
        return _done(line, index, _supervise(line, procs, stop, beat, name))
    finally:
        line.close()


class _Beat:
    """The agent's heartbeat (runtime/liveness.py), advanced from its supervision loop."""

    def __init__(self, line: Lifeline, index: int) -> None:
        self.line = line
        self.key = keys.agent_beat(index)
        self.last = 0.0

    def tick(self) -> None:
        if time.monotonic() - self.last >= BEAT_S:
            self.line.call(lambda s: s.add(self.key, 1))
            self.last = time.monotonic()


def _done(line: Lifeline, index: int, code: int) -> int:
    """Say this agent ended on purpose (its heartbeat stops next), then return `code`."""
    with contextlib.suppress(CoordinatorLost):  # the coordinator may be gone
        line.call(lambda s: s.set(keys.agent_done(index), str(code)))
    return code


def _report_exit(store: dist.Store, rank: int, code: int) -> None:
    store.set(keys.exit_code(rank), str(code))


def _supervise(
    line: Lifeline, procs: dict[int, subprocess.Popen[bytes]],
    stop: threading.Event | None, beat: _Beat, name: str,
) -> int:
    codes: dict[int, int] = {}
    drained = False
    try:
        while len(codes) < len(procs):
            for rank, proc in procs.items():
                if rank not in codes and (code := proc.poll()) is not None:
                    codes[rank] = code
                    line.call(functools.partial(_report_exit, rank=rank, code=code))
            if line.call(lambda s: s.check([keys.STOP])) or (stop and stop.is_set()):
                break
            if _terminated.is_set() and not drained:
                # A spot notice: ask the launcher for a final checkpoint; the processes
                # keep running until they have written it and ended.
                line.call(lambda s: s.set(keys.DRAIN, f"machine {name} got SIGTERM"))
                drained = True
            beat.tick()
            time.sleep(POLL_S)
    except CoordinatorLost as lost:
        # Nothing to report to and nobody to wait for: the job is over on this machine.
        running = [r for r, p in procs.items() if p.poll() is None]
        processes.stop_all(procs.values())  # SIGTERM, SIGKILL after 2 s: a wait in gloo too
        stopped = ", ".join(f"rank {r} {processes.exit_text(procs[r].returncode or 0)}"
                            for r in running) or "none left running"
        raise CoordinatorLost(f"{lost}; stopped its job processes: {stopped}") from None
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
    code = main()
    sys.stderr.flush()
    # Not sys.exit: a lost coordinator leaves the lifeline's thread blocked in a store call,
    # and the interpreter's teardown around it can wait on that call.
    os._exit(code)
