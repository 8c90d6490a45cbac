"""The agent protocol, both halves: the worker agent of a worker machine (joins a job's
rendezvous store and runs the stage processes the launcher gives it) and the launcher's side
(hand agents their ranks, read their exit reports).

    python -m heterps_core.runtime.agent --coordinator HOST:PORT --provides cpu,gpu-v100 \\
        [--bind gpu-v100=cuda:0] [--name NAME]

Contract (docs/operations.md; keys in heterps_core.rendezvous): the agent registers
`agents/I` = {"name", "provides"} in the store, waits for `agents/I/ranks` (a JSON list,
possibly empty; written by `assign`), starts one worker process per rank, writes
`exit/RANK` = exit code as each ends (read by `exit_of`), and kills its processes when the
launcher sets `control/stop` or the store goes away. One agent serves one job.
"""

from __future__ import annotations

import argparse
import json
import os
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
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.spec import JobSpec, RankSpec

POLL_S = 0.05
WORKER_MODULE = "heterps_core.runtime.worker"


# --- the launcher's half ------------------------------------------------------------------


def is_remote(rank: RankSpec) -> bool:
    return rank.target.startswith("remote")


def assign(store: dist.Store, spec: JobSpec, remote: Sequence[RankSpec]) -> bool:
    """Once agents cover every remote resource type, give each its ranks (round-robin)."""
    joined = int(store.add(keys.AGENTS_JOINED, 0))
    agents = [
        json.loads(store.get(keys.agent(i))) for i in range(joined) if store.check([keys.agent(i)])
    ]
    by_type: dict[str, list[int]] = {}
    for i, agent in enumerate(agents):
        for resource in agent["provides"]:
            by_type.setdefault(resource, []).append(i)
    needed = {spec.stages[r.stage].resource for r in remote}
    if not needed <= by_type.keys():
        return False
    plan: dict[int, list[int]] = {i: [] for i in range(len(agents))}
    for n, rank in enumerate(remote):
        hosts = by_type[spec.stages[rank.stage].resource]
        plan[hosts[n % len(hosts)]].append(rank.rank)
    for i, ranks in plan.items():
        store.set(keys.agent_ranks(i), json.dumps(ranks))
    return True


def exit_of(store: dist.Store, rank: int) -> int | None:
    """The exit code an agent reported for `rank`, or None while it runs."""
    key = keys.exit_code(rank)
    return int(store.get(key)) if store.check([key]) else None


# --- the agent's half ---------------------------------------------------------------------


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
    store.set(
        keys.agent(index),
        json.dumps(
            {
                "name": name or f"{socket.gethostname()}-{os.getpid()}",
                "provides": list(provides),
            }
        ),
    )
    key = keys.agent_ranks(index)
    deadline = time.monotonic() + join_timeout_s
    while not store.check([key]):
        if store.check([keys.STOP]) or (stop and stop.is_set()) or time.monotonic() > deadline:
            return 0
        time.sleep(POLL_S)
    ranks: list[int] = json.loads(store.get(key))
    if not ranks:
        return 0
    spec = JobSpec.from_json(store.get(keys.SPEC).decode())
    env = processes.child_env(loopback=host in ("127.0.0.1", "localhost"))
    procs = {}
    for rank in ranks:
        resource = spec.stages[spec.ranks[rank].stage].resource
        # Without a local binding the worker follows the job's target (remote -> cpu,
        # remote:cuda -> cuda:0), so both ends of every link agree on its device.
        device = ["--device", str(targets[resource])] if resource in named else []
        args = ["--store", coordinator, "--rank", str(rank), *device]
        procs[rank] = processes.spawn(WORKER_MODULE, args, env)
    return _supervise(store, procs, stop)


def _supervise(
    store: dist.TCPStore, procs: dict[int, subprocess.Popen[bytes]], stop: threading.Event | None
) -> int:
    codes: dict[int, int] = {}
    try:
        while len(codes) < len(procs):
            for rank, proc in procs.items():
                if rank not in codes and (code := proc.poll()) is not None:
                    codes[rank] = code
                    store.set(keys.exit_code(rank), str(code))
            if store.check([keys.STOP]) or (stop and stop.is_set()):
                break
            time.sleep(POLL_S)
    except (RuntimeError, OSError):
        pass  # the coordinator is gone: nothing to report to, stop the job's processes
    finally:
        processes.stop_all(procs.values())
    return 0 if all(proc.returncode == 0 for proc in procs.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m heterps_core.runtime.agent")
    parser.add_argument("--coordinator", required=True, help="the job's rendezvous store HOST:PORT")
    parser.add_argument("--provides", required=True, help="comma-separated resource types")
    parser.add_argument("--bind", help="local targets per type, e.g. gpu-v100=cuda:0 (default cpu)")
    parser.add_argument("--name", default="", help="how the launcher names this machine")
    parser.add_argument("--join-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    provides = [p.strip() for p in args.provides.split(",") if p.strip()]
    try:
        return run_agent(args.coordinator, provides, args.name, args.bind, args.join_timeout)
    except HeterPSError as exc:
        print(f"heterps agent: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
