"""The worker agent of a worker machine: joins a job's rendezvous store and runs the stage
processes the launcher gives it.

    python -m heterps_core.runtime.agent --coordinator HOST:PORT --provides cpu,gpu-v100 \\
        [--bind gpu-v100=cuda:0] [--name NAME]

Contract (docs/operations.md): the agent registers `agents/I` = {"name", "provides"} in the
store, waits for `agents/I/ranks` (a JSON list, possibly empty), starts one worker process
per rank, writes `exit/RANK` = exit code as each ends, and kills its processes when the
launcher sets `control/stop` or the store goes away. One agent serves one job.
"""

from __future__ import annotations

import argparse
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

from heterps_core.errors import HeterPSError
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.launcher import PACKAGE_ROOT, _die_with_parent
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.store import connect, parse_address

POLL_S = 0.05


def join(coordinator: str, timeout_s: float) -> dist.TCPStore:
    """Connect to the coordinator's store, retrying until it is up or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return connect(coordinator, timeout=timedelta(seconds=max(1.0, timeout_s)))
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
    host, _ = parse_address(coordinator)
    targets = parse_binding(bind, provides)
    named = {item.partition("=")[0].strip() for item in (bind or "").split(",")}
    store = join(coordinator, join_timeout_s)
    index = int(store.add("agents/joined", 1)) - 1
    store.set(
        f"agents/{index}",
        json.dumps(
            {
                "name": name or f"{socket.gethostname()}-{os.getpid()}",
                "provides": list(provides),
            }
        ),
    )
    key = f"agents/{index}/ranks"
    deadline = time.monotonic() + join_timeout_s
    while not store.check([key]):
        if store.check(["control/stop"]) or (stop and stop.is_set()) or time.monotonic() > deadline:
            return 0
        time.sleep(POLL_S)
    ranks: list[int] = json.loads(store.get(key))
    if not ranks:
        return 0
    spec = JobSpec.from_json(store.get("job/spec").decode())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    if host in ("127.0.0.1", "localhost"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    procs = {}
    for rank in ranks:
        resource = spec.stages[spec.ranks[rank].stage].resource
        # Without a local binding the worker follows the job's target (remote -> cpu,
        # remote:cuda -> cuda:0), so both ends of every link agree on its device.
        device = ["--device", str(targets[resource])] if resource in named else []
        procs[rank] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heterps_core.runtime.worker",
                "--store",
                coordinator,
                "--rank",
                str(rank),
                *device,
            ],
            env=env,
            preexec_fn=_die_with_parent,
        )
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
                    store.set(f"exit/{rank}", str(code))
            if store.check(["control/stop"]) or (stop and stop.is_set()):
                break
            time.sleep(POLL_S)
    except (RuntimeError, OSError):
        pass  # the coordinator is gone: nothing to report to, stop the job's processes
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
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
