"""Intra-op threads of a job's processes: the cores of a machine follow the predicted work.

A pipelined plan on one machine runs a process per stage replica and per parameter-server
shard. Given one thread each, the busiest one (the dense stage of a CTR model) caps the
run at the one-thread rate while the others leave cores idle. So the compile step sizes
the thread count of every process the runtime places on this machine from the plan's
predicted busy shares (`busy_shares`, `size_threads`); a target with an explicit count
(`cpu:N`) keeps it, and so do the processes of other machines (agents).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from heterps_core.plan import Plan
from heterps_core.runtime import sync
from heterps_core.runtime.binding import Target, parse_target
from heterps_core.runtime.datasource import AHEAD
from heterps_core.runtime.spec import JobSpec, RankSpec


def machine_cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share),
    not the machine's count: threads beyond them only take turns."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def busy_shares(plan: Plan, sync_mode: str) -> tuple[list[float], float]:
    """Each stage unit's predicted busy share, and one parameter-server shard's.

    A unit of stage s works time_per_batch_s on 1/units of the mini-batches. The period
    of one mini-batch is the slowest unit's time when the stages overlap, their sum when
    the sync mode flushes every mini-batch (the stages take turns). A share is a process's
    work over that period: 1.0 for the bottleneck. Unknown times count as idle (0)."""
    per_unit = [(s.time_per_batch_s or 0.0) / (s.units or 1) for s in plan.stages]
    server = plan.parameter_server
    shard = server.time_per_batch_s if server is not None else 0.0
    flushes = len(per_unit) > 1 and sync.get(sync_mode).flushes
    period = sum(per_unit) if flushes else max(per_unit, default=0.0)
    period = max(period, shard)
    if period <= 0:
        return [0.0] * len(per_unit), 0.0
    return [t / period for t in per_unit], shard / period


def size_threads(shares: Sequence[float], cores: int, fixed: Sequence[int] = ()) -> list[int]:
    """Threads for processes sharing `cores` cores, from their busy shares (0..1).

    Every process keeps one thread (it is busy part of the time and must not wait for a
    core it never gets). The whole cores the processes leave idle (cores minus the sum of
    their shares, a fixed process's share counted once per thread it holds) go to the
    busiest processes as one more thread each, split evenly among ties. Whole cores only:
    a thread without a core of its own takes turns with the others' (torch's pool waits for
    its slowest thread), which measured slower than one thread (docs/runtime.md). `fixed`
    holds 0 for a process to size, else its explicit count (kept)."""
    fixed = list(fixed) or [0] * len(shares)
    demand = sum(s * (f or 1) for s, f in zip(shares, fixed, strict=True))
    spare = max(0.0, cores - demand)
    free = [i for i, f in enumerate(fixed) if not f]
    top = max((shares[i] for i in free), default=0.0)
    busiest = [i for i in free if top > 0 and shares[i] >= top - 1e-9]
    threads = [f or 1 for f in fixed]
    for i in busiest:
        threads[i] = min(cores, 1 + math.floor(spare / len(busiest) + 1e-6))
    return threads


def rank_threads(
    ranks: Sequence[RankSpec], plan: Plan, sync_mode: str, cores: int
) -> dict[int, int]:
    """rank -> threads for every process on this machine's CPU (a target `cpu` or `cpu:N`;
    a GPU rank needs its host thread too and keeps one). A shard served inside a stage's
    process adds its share to that process's (at most 1: one thread); remote ranks are
    left out (their machine is not this one)."""
    stage_shares, shard_share = busy_shares(plan, sync_mode)
    here = [r for r in ranks if r.host < 0 and not parse_target(r.target).is_remote]
    shares = [shard_share if r.role == "ps" else stage_shares[r.stage] for r in here]
    for hosted in (r for r in ranks if r.host >= 0):
        # Served on the host's own thread: it cannot make that process busier than all of it.
        i = [r.rank for r in here].index(hosted.host)
        shares[i] = min(1.0, shares[i] + shard_share)
    fixed = [_fixed(parse_target(r.target)) for r in here]
    return {r.rank: n for r, n in zip(here, size_threads(shares, cores, fixed), strict=True)}


def input_ahead(threads: Mapping[int, int], cores: int) -> int:
    """Mini-batches a stage process on this machine makes ahead on its input thread
    (runtime/prefetch.py), given every process's threads here: `datasource.AHEAD` while
    they leave a core idle, else 0 (inline). The thread overlaps a stage's waits only on a
    core of its own; with every core held by intra-op threads it takes turns with them, and
    torch's pool waits for the thread it displaced: measured on 2 cores, inline ran 1.16x
    (SGD) and 1.09x (Adam) of ahead for 1 stage `cpu:2` (docs/runtime.md)."""
    return AHEAD if sum(threads.values()) < cores else 0


def with_threads(spec: JobSpec, threads: Mapping[int, int], cores: int) -> JobSpec:
    """The spec with every sized process's `RankSpec.threads` and `ahead` set (what its
    worker applies; its target stays the binding, as the user gave it)."""
    ahead = input_ahead(threads, cores)
    return replace(spec, ranks=tuple(
        replace(r, threads=threads[r.rank], ahead=ahead) if r.rank in threads else r
        for r in spec.ranks))


def _fixed(target: Target) -> int:
    if target.kind != "cpu":
        return 1  # a GPU process's host thread: not resized
    return target.threads if target.explicit else 0
