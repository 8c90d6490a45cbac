"""The profiling phase: each worker's compute and communication time per step.

Every worker runs warm-up steps (not counted), then `profile_rounds` measured steps on a
scratch copy of its replica, so profiling never changes the model that trains. Compute is
the trimmed mean of the measured step times times the worker's emulated slowdown; with
`profile_pool` (emulated workers on one host) the base is the median over all workers.
Communication is the trimmed mean of the measured in-process push (flatten the parameters
and add them into the server's vector) plus the wire time of the dense model on the
configured link (bytes / bandwidth + latency), since every worker shares this process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace

import torch

from heterps_core.dataparallel.compression import VALUE_BYTES
from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.events import WorkerProfile
from heterps_core.dataparallel.flat import get_flat
from heterps_core.dataparallel.worker import Worker


def trimmed_mean(values: list[float], trim: float = 0.2) -> float:
    """Mean after dropping the `trim` fraction of samples at each end (outliers)."""
    ordered = sorted(values)
    cut = int(len(ordered) * trim)
    kept = ordered[cut : len(ordered) - cut] or ordered
    return sum(kept) / len(kept)


def profile_workers(
    workers: list[Worker], config: TrainConfig, stream_for: Callable[[int], ShardStream]
) -> tuple[WorkerProfile, ...]:
    """Measure every worker; `stream_for(w)` gives a profiling-only stream for worker w."""
    measured = tuple(profile_one(w, config, stream_for(w.index)) for w in workers)
    return pooled(measured) if config.profile_pool else measured


def pooled(profiles: tuple[WorkerProfile, ...]) -> tuple[WorkerProfile, ...]:
    """One base compute and comm time for all (median), each compute times its slowdown."""
    base = statistics.median(p.measured_s for p in profiles)
    comm = statistics.median(p.comm_s for p in profiles)
    return tuple(replace(p, compute_s=base * p.slowdown, comm_s=comm) for p in profiles)


def profile_one(worker: Worker, config: TrainConfig, stream: ShardStream) -> WorkerProfile:
    """One worker's profile; the process backend's workers each call it for themselves."""
    scratch = worker.scratch(stream)
    compute = _timed(scratch.step, config.profile_warmup, config.profile_rounds)
    server = get_flat(worker.model)
    push = _timed(lambda: server.add_(get_flat(scratch.model)), config.profile_warmup,
                  config.profile_rounds)
    return WorkerProfile(
        worker=worker.index,
        compute_s=compute * config.slowdown(worker.index),
        comm_s=push + wire_s(server.numel() * VALUE_BYTES, config),
        slowdown=config.slowdown(worker.index),
        batch_size=worker.batch_size,
        measured_s=compute,
    )


def wire_s(nbytes: float, config: TrainConfig) -> float:
    """Time to move `nbytes` over the configured link."""
    return config.latency_s + nbytes / config.bytes_per_s


def _timed(action: Callable[[], object], warmup: int, rounds: int) -> float:
    for _ in range(warmup):
        action()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return trimmed_mean(times)


def set_worker_threads() -> None:
    """One intra-op thread, as each worker would have on its own core."""
    torch.set_num_threads(1)
