"""The data-parallel trainer: real training on emulated time (a discrete-event engine).

Every worker's steps are real: its own replica, its own shard, real forward, backward and
optimiser steps, real parameter-server pushes, pulls and averaging, so the losses, the
staleness and the bytes are what the sync mode really produces. Only *time* is emulated:
a step lasts the worker's profiled compute time per sample, times its batch size, times
its injected slowdown, times a little seeded log-normal jitter; a transfer lasts its bytes
over the configured link. Events are processed in time order, so a push lands on the
server, and a pull sees the server, exactly when it would on a real cluster with those
speeds. This keeps runs repeatable and independent of how busy this machine is, and lets a
2-core machine emulate 4 workers of 1x/2x/4x speed without them competing for cores.
The parameter server itself is modelled as infinitely fast (no queueing at the server).
"""

from __future__ import annotations

import copy
import heapq
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import torch

from heterps_core.dataparallel.compression import VALUE_BYTES, Payload, message_bytes, plain
from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.events import (
    CommitEvent,
    MetricsCallback,
    PhaseEvent,
    ProfileEvent,
    RebalanceEvent,
    StepEvent,
    WorkerProfile,
    no_metrics,
)
from heterps_core.dataparallel.flat import get_flat
from heterps_core.dataparallel.modes.base import RoundPlan, SyncMode
from heterps_core.dataparallel.observers import ServerObservers
from heterps_core.dataparallel.profiling import profile_workers, wire_s
from heterps_core.dataparallel.result import TrainResult, WorkerSummary
from heterps_core.dataparallel.stragglers import StragglerDetector
from heterps_core.dataparallel.worker import Worker
from heterps_core.zoo.base import Batch, ChainModel, ModelConfig, ZooModel

CancelHook = Callable[[], bool]


class _Kind(IntEnum):
    # At equal times: updates land first, then evaluation sees them, then workers move on.
    PUSH = 0
    EVAL = 1
    STEP = 2
    START = 3


@dataclass
class _Round:
    plan: RoundPlan
    pulled: torch.Tensor
    pulled_version: int
    staleness: int
    steps_done: int = 0
    payload: Payload | None = None


def never_cancel() -> bool:
    return False


class DataParallelRun:
    """One run of a zoo model under one sync mode; `run()` trains and returns the result."""

    def __init__(
        self, zoo_model: ZooModel, model_config: ModelConfig, mode: SyncMode,
        config: TrainConfig, metrics: MetricsCallback = no_metrics,
        cancel: CancelHook = never_cancel, profile: tuple[WorkerProfile, ...] | None = None,
    ) -> None:
        self.zoo_model = zoo_model
        self.model_config = model_config
        self.mode = mode
        self.config = config
        self.metrics = metrics
        self.cancel = cancel
        self.given_profile = profile

    def run(self) -> TrainResult:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one core per emulated worker, as on a cluster
        try:
            if self.config.backend == "process":
                # Imported here: the process backend imports this module's helpers.
                from heterps_core.dataparallel.process.server import ProcessEngine

                return ProcessEngine(self).run()
            return _Engine(self).run()
        finally:
            torch.set_num_threads(threads)


def train(
    zoo_model: ZooModel, model_config: ModelConfig, mode: SyncMode, config: TrainConfig,
    metrics: MetricsCallback = no_metrics, cancel: CancelHook = never_cancel,
    profile: tuple[WorkerProfile, ...] | None = None,
) -> TrainResult:
    """Profile the workers (unless `profile` is given), then train; see `DataParallelRun`."""
    return DataParallelRun(zoo_model, model_config, mode, config, metrics, cancel, profile).run()


def profile(
    zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig
) -> tuple[WorkerProfile, ...]:
    """Only the profiling phase, e.g. to share one profile between runs that are compared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = zoo_model.build(model_config, seed=config.seed)
        workers = _make_workers(zoo_model, model_config, model, config)
        return profile_workers(workers, config, lambda w: shard_stream(zoo_model, model_config,
                                                                 config, 500 + w))
    finally:
        torch.set_num_threads(threads)


def shard_stream(zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig,
                 offset: int) -> ShardStream:
    """Worker w trains on offset 1 + w and profiles on 500 + w (seeded, so repeatable)."""
    seed = config.seed * 1000 + offset
    return ShardStream(iter(zoo_model.batches(model_config, config.batch_size, seed=seed)))


def _make_workers(zoo_model: ZooModel, model_config: ModelConfig, model: ChainModel,
                  config: TrainConfig) -> list[Worker]:
    return [
        Worker(w, copy.deepcopy(model), shard_stream(zoo_model, model_config, config, 1 + w),
               config.batch_size, config.lr, config.momentum)
        for w in range(config.workers)
    ]


def held_out(zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig) -> Batch:
    stream = ShardStream(iter(zoo_model.batches(model_config, config.eval_samples,
                                                seed=1_000_000 + config.seed)))
    return stream.take(config.eval_samples)


class _Engine(ServerObservers):
    def __init__(self, spec: DataParallelRun) -> None:
        cfg = spec.config
        self.spec, self.cfg, self.mode, self.emit = spec, cfg, spec.mode, spec.metrics
        self.server = spec.zoo_model.build(spec.model_config, seed=cfg.seed)
        self.workers = _make_workers(spec.zoo_model, spec.model_config, self.server, cfg)
        self.held_out = held_out(spec.zoo_model, spec.model_config, cfg)
        self.theta = get_flat(self.server)
        self.dense_bytes = self.theta.numel() * VALUE_BYTES
        # stale[w, i]: entry i changed on the server since worker w last pulled.
        self.stale = torch.zeros(cfg.workers, self.theta.numel(), dtype=torch.bool)
        self.version = 0
        self.clocks = [0] * cfg.workers
        self.rounds: list[_Round | None] = [None] * cfg.workers
        self.blocked_since: dict[int, float] = {}
        self.arrived: dict[int, tuple[torch.Tensor, float]] = {}
        self.pending: dict[int, tuple[float, int]] = {}  # in-flight step: duration, batch
        self.detector = StragglerDetector(cfg.workers, cfg.straggler_window, cfg.straggler_z)
        self.flags = tuple(False for _ in range(cfg.workers))
        self.per_sample: list[deque[float]] = [
            deque(maxlen=cfg.straggler_window) for _ in range(cfg.workers)
        ]
        self.rng = random.Random(cfg.seed)
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.now = 0.0
        self.global_step = 0
        self.stopped = ""
        self.last_rebalance = 0.0
        self.summaries = [
            WorkerSummary(w, cfg.slowdown(w), batch_size=cfg.batch_size)
            for w in range(cfg.workers)
        ]

    # -- setup and main loop -------------------------------------------------------------

    def run(self) -> TrainResult:
        wall = time.perf_counter()
        cfg = self.cfg
        profile = self.spec.given_profile or profile_workers(
            self.workers, cfg,
            lambda w: shard_stream(self.spec.zoo_model, self.spec.model_config, cfg, 500 + w),
        )
        if len(profile) != cfg.workers:
            raise DataParallelError("profile", f"has {len(profile)} workers, the job {cfg.workers}")
        self.profile = profile
        self.emit(ProfileEvent(profile))
        self.profile_per_sample = [p.compute_s / p.batch_size for p in profile]
        self.push_local_s = [max(0.0, p.comm_s - wire_s(self.dense_bytes, cfg)) for p in profile]
        self.result = TrainResult(
            self.mode.name, dict(self.mode.settings()), cfg.to_dict(), profile, self.summaries
        )
        for w in range(cfg.workers):
            self._schedule(0.0, _Kind.START, w)
        self._schedule(0.0, _Kind.EVAL, -1)
        self._loop()
        if not self.result.evals or self.result.evals[-1].time_s < self.now:
            self._evaluate(self.now)
        self.result.time_s = self.now
        self.result.global_steps = self.global_step
        self.result.stopped = self.stopped or "idle"
        self.result.wall_s = time.perf_counter() - wall
        return self.result

    def _loop(self) -> None:
        handlers = {
            _Kind.START: self._start, _Kind.STEP: self._step, _Kind.PUSH: self._push,
            _Kind.EVAL: lambda t, _w: self._evaluate_and_reschedule(t),
        }
        while self.heap and not self.stopped:
            t, kind, _, worker = heapq.heappop(self.heap)
            if t > self.cfg.duration_s:
                self.now, self.stopped = self.cfg.duration_s, "duration"
                break
            if self.spec.cancel():
                self.stopped = "cancelled"
                break
            self.now = t
            handlers[_Kind(kind)](t, worker)

    def _schedule(self, t: float, kind: _Kind, worker: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, int(kind), self.seq, worker))

    # -- a worker's round ------------------------------------------------------------------

    def _batch_size(self, w: int) -> int:
        return self.workers[w].batch_size

    def _start(self, t: float, w: int) -> None:
        admitted = self._admit(t, w)
        if admitted is None:
            return
        plan, staleness = admitted
        summary = self.summaries[w]
        pull_s = 0.0
        if not plan.collective:  # after an all-reduce the worker already holds the result
            self.workers[w].load(self.theta)
            # The server sends the entries changed since this worker's last pull.
            pulled = message_bytes(self.theta.numel(), int(self.stale[w].sum()))
            self.stale[w] = False
            summary.bytes_received += pulled
            pull_s = self.push_local_s[w] + wire_s(pulled, self.cfg)
        self.rounds[w] = _Round(plan, self.theta.clone(), self.version, staleness)
        self._schedule_step(t + pull_s, w)

    def _schedule_step(self, begin: float, w: int) -> None:
        # Duration and batch are fixed when the step begins; a rebalance applies to later steps.
        batch = self.workers[w].batch_size
        jitter = self.rng.lognormvariate(0.0, self.cfg.jitter) if self.cfg.jitter else 1.0
        duration = self.profile_per_sample[w] * batch * jitter
        self.pending[w] = (duration, batch)
        self._schedule(begin + duration, _Kind.STEP, w)

    def _step(self, t: float, w: int) -> None:
        worker, summary, rnd = self.workers[w], self.summaries[w], self.rounds[w]
        assert rnd is not None
        step_time, batch = self.pending.pop(w)
        loss = worker.step(batch)
        self.global_step += 1
        summary.steps += 1
        summary.compute_s += step_time
        summary.batch_size = batch
        self.per_sample[w].append(step_time / batch)
        self.detector.record(w, step_time)
        self._update_flags(t)
        self.emit(StepEvent(w, summary.steps, self.global_step, t, step_time, loss,
                            rnd.staleness, summary.bytes_sent, self.mode.phase(),
                            self.flags[w], batch))
        self._observe(loss, t)
        if self.cfg.max_steps is not None and self.global_step >= self.cfg.max_steps:
            self.stopped = "max_steps"
            return
        rnd.steps_done += 1
        if rnd.steps_done < rnd.plan.local_steps:
            self._schedule_step(t, w)
        elif rnd.plan.collective:
            self._arrive(t, w, worker.params() - rnd.pulled)
        else:
            self._send(t, w, worker.params() - rnd.pulled)

    def _observe(self, loss: float, t: float) -> None:
        previous = self.mode.phase()
        reason = self.mode.observe_loss(loss, self._view(t))
        if reason is not None:
            event = PhaseEvent(t, self.global_step, previous, self.mode.phase(), reason, loss)
            self.result.switch = event
            self.emit(event)

    def _send(self, t: float, w: int, delta: torch.Tensor) -> None:
        rnd = self.rounds[w]
        assert rnd is not None
        compressor = self.mode.compressor
        compress = rnd.plan.compress and compressor is not None
        payload = compressor.compress(w, delta) if compress and compressor else plain(delta)
        rnd.payload = payload
        self.summaries[w].bytes_sent += payload.nbytes
        self._schedule(t + self.push_local_s[w] + wire_s(payload.nbytes, self.cfg), _Kind.PUSH, w)

    def _push(self, t: float, w: int) -> None:
        rnd = self.rounds[w]
        assert rnd is not None and rnd.payload is not None
        self.theta.add_(rnd.payload.update)
        self.stale |= rnd.payload.update != 0
        lag = self.version - rnd.pulled_version
        self.version += 1
        self.clocks[w] += 1
        self.summaries[w].commits += 1
        self.emit(CommitEvent(w, t, rnd.payload.nbytes, lag, rnd.staleness, self.mode.phase(),
                              rnd.plan.compress))
        self.rounds[w] = None
        self._schedule(t, _Kind.START, w)
        for other in sorted(self.blocked_since):
            self._schedule(t, _Kind.START, other)

    def _arrive(self, t: float, w: int, delta: torch.Tensor) -> None:
        self.arrived[w] = (delta, t)
        if len(self.arrived) < self.cfg.workers:
            return
        n = self.cfg.workers
        sizes = [float(self.workers[v].batch_size) for v in range(n)]
        # Weighted by batch share, so rebalanced batches average like one big batch.
        mean = sum(self.arrived[v][0] * (sizes[v] / sum(sizes)) for v in range(n))
        self.theta.add_(mean)
        self.version += 1
        ring_bytes = int(2 * (n - 1) / n * self.dense_bytes)
        done = t + max(self.push_local_s) + 2 * (n - 1) * self.cfg.latency_s \
            + ring_bytes / self.cfg.bytes_per_s
        for v in range(n):
            summary = self.summaries[v]
            summary.wait_s += t - self.arrived[v][1]
            summary.bytes_sent += ring_bytes
            summary.bytes_received += ring_bytes
            summary.commits += 1
            self.clocks[v] += 1
            self.workers[v].load(self.theta)
            self.rounds[v] = None
            self._schedule(done, _Kind.START, v)
        self.arrived.clear()
        self.stale[:] = False
        self.emit(CommitEvent(-1, done, ring_bytes, 0, 0, self.mode.phase(), False))

    # -- observers -------------------------------------------------------------------------

    def _evaluate_and_reschedule(self, t: float) -> None:
        self._evaluate(t)
        if self.stopped != "target":
            self._schedule(t + self.cfg.eval_every_s, _Kind.EVAL, -1)

    def _rebalance(self, t: float) -> None:
        sizes = self._rebalanced(t, tuple(w.batch_size for w in self.workers))
        if sizes is None:
            return
        for worker, size in zip(self.workers, sizes, strict=True):
            worker.batch_size = size
        self.emit(RebalanceEvent(t, sizes))
