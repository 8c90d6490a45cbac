"""The loopback link of this machine: the one-way bandwidth of a gloo message between two
local processes (`--include-local`'s network figure), repeated until its median is known
under `measure.repeat_until_known`.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import torch

from heterps_core.profiler.measure import current_precision, median_spread


def _ping(rank: int, port: int, floats: int, rounds: int, target: float, cap: int) -> None:
    """Round trips in blocks of `rounds` until the median's spread is at most `target` or
    `cap` were timed (rank 0 decides and tells rank 1); rank 0 prints [median s, spread, n]
    as JSON (the process is `loopback`'s, started with `python -c`)."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    buffer = torch.zeros(floats)
    more = torch.ones(1)
    times: list[float] = []
    while more.item():
        for _ in range(rounds + (3 if not times else 0)):  # three warm-up trips at first
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(buffer, 1)
                dist.recv(buffer, 1)
            else:
                dist.recv(buffer, 0)
                dist.send(buffer, 0)
            times.append(time.perf_counter() - t0)
        if rank == 0:
            timed = sorted(times[3:])
            spread = median_spread(timed)
            known = spread is not None and spread <= target
            more[0] = 0.0 if known or len(timed) + rounds > cap else 1.0
            dist.send(more, 1)
        else:
            dist.recv(more, 0)
    if rank == 0:
        timed = sorted(times[3:])
        spread = median_spread(timed)
        print(json.dumps([statistics.median(timed), -1.0 if spread is None else spread,
                          len(timed)]), flush=True)
    dist.destroy_process_group()


@dataclass(frozen=True)
class Link:
    """The loopback's one-way bandwidth, the spread of its median round trip, and how many."""

    gbps: float
    spread: float | None
    rounds: int


def loopback(megabytes: float, rounds: int = 50) -> Link:
    """One-way Gbit/s of a gloo message of this size between two local processes (the
    median round trip carries it twice); under `measure.repeat_until_known`, more blocks of
    `rounds` until the median is known."""
    precision = current_precision(rounds)
    with socket.socket() as probe:  # a free port for the pair's rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cap = max(rounds, precision.max_repeats * 10)  # round trips are cheap: ten times the cap
    floats = max(1, int(megabytes * 1e6 / 4))
    # Two plain processes, not multiprocessing's spawn: a spawn leaves its resource tracker
    # running beside the caller (a web worker, a test session) for the caller's whole life.
    pair = [subprocess.Popen(
        [sys.executable, "-c", "from heterps_core.profiler.loopback import _ping; "
         f"_ping({rank}, {port}, {floats}, {rounds}, float('{precision.target}'), {cap})"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    outputs = [p.communicate(timeout=600) for p in pair]
    if any(p.returncode for p in pair):
        why = next(err for p, (_, err) in zip(pair, outputs, strict=True) if p.returncode)
        raise RuntimeError(f"the loopback measurement failed: {why.strip()[-500:]}")
    median, spread, n = json.loads(outputs[0][0].strip().splitlines()[-1])
    return Link(2 * max(megabytes, 4e-6) * 1e6 * 8 / median / 1e9,
                None if spread < 0 else spread, int(n))


def loopback_gbps(megabytes: float, rounds: int = 50) -> float:
    return loopback(megabytes, rounds).gbps
