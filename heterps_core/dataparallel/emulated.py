"""The emulated backend: real training on emulated time (a discrete-event engine).

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

This module keeps only the transport (the event heap, transfer times, the in-process
replicas); what the server decides is `state.ServerState`, shared with the process backend.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from enum import IntEnum

import torch

from heterps_core.dataparallel.compression import Payload, message_bytes, plain
from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.job import DataParallelRun, make_workers, shard_stream
from heterps_core.dataparallel.modes.base import RoundPlan
from heterps_core.dataparallel.profiling import profile_workers, wire_s
from heterps_core.dataparallel.result import TrainResult
from heterps_core.dataparallel.state import ServerState


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


class EmulatedBackend:
    def __init__(self, run: DataParallelRun) -> None:
        self.run_spec = run
        self.cfg = cfg = run.config
        self.state = ServerState(run)
        self.workers = make_workers(run.zoo_model, run.model_config, self.state.server, cfg)
        self.rounds: list[_Round | None] = [None] * cfg.workers
        self.arrived: dict[int, tuple[torch.Tensor, float]] = {}
        self.pending: dict[int, tuple[float, int]] = {}  # in-flight step: duration, batch
        self.rng = random.Random(cfg.seed)
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.now = 0.0

    def run(self) -> TrainResult:
        cfg, run, state = self.cfg, self.run_spec, self.state
        profile = run.given_profile or profile_workers(
            self.workers, cfg,
            lambda w: shard_stream(run.zoo_model, run.model_config, cfg, 500 + w),
        )
        if len(profile) != cfg.workers:
            raise DataParallelError("profile", f"has {len(profile)} workers, the job {cfg.workers}")
        state.begin(profile)
        self.push_local_s = [max(0.0, p.comm_s - wire_s(state.dense_bytes, cfg)) for p in profile]
        for w in range(cfg.workers):
            self._schedule(0.0, _Kind.START, w)
        self._schedule(0.0, _Kind.EVAL, -1)
        self._loop()
        return state.finish(self.now)

    def _loop(self) -> None:
        handlers = {
            _Kind.START: self._start, _Kind.STEP: self._step, _Kind.PUSH: self._push,
            _Kind.EVAL: lambda t, _w: self._evaluate_and_reschedule(t),
        }
        state = self.state
        while self.heap and not state.stopped:
            t, kind, _, worker = heapq.heappop(self.heap)
            if t > self.cfg.duration_s:
                self.now, state.stopped = self.cfg.duration_s, "duration"
                break
            if self.run_spec.cancelled():
                state.stopped = "cancelled"
                break
            self.now = t
            handlers[_Kind(kind)](t, worker)

    def _schedule(self, t: float, kind: _Kind, worker: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, int(kind), self.seq, worker))

    # -- a worker's round ------------------------------------------------------------------

    def _start(self, t: float, w: int) -> None:
        state = self.state
        admitted = state.admit(t, w)
        if admitted is None:
            return
        plan, staleness = admitted
        pull_s = 0.0
        if not plan.collective:  # after an all-reduce the worker already holds the result
            self.workers[w].load(state.theta)
            # The server sends the entries changed since this worker's last pull.
            pulled = message_bytes(state.theta.numel(), int(state.stale[w].sum()))
            state.stale[w] = False
            state.summaries[w].bytes_received += pulled
            pull_s = self.push_local_s[w] + wire_s(pulled, self.cfg)
        self.rounds[w] = _Round(plan, state.theta.clone(), state.version, staleness)
        self._schedule_step(t + pull_s, w)

    def _schedule_step(self, begin: float, w: int) -> None:
        # Duration and batch are fixed when the step begins; a rebalance applies to later steps.
        batch = self.state.batch_sizes[w]
        jitter = self.rng.lognormvariate(0.0, self.cfg.jitter) if self.cfg.jitter else 1.0
        duration = self.state.profile_per_sample[w] * batch * jitter
        self.pending[w] = (duration, batch)
        self._schedule(begin + duration, _Kind.STEP, w)

    def _step(self, t: float, w: int) -> None:
        worker, rnd = self.workers[w], self.rounds[w]
        assert rnd is not None
        step_time, batch = self.pending.pop(w)
        loss = worker.step(batch)
        self.state.step(w, t, step_time, batch, loss, rnd.staleness)
        if self.state.stopped == "max_steps":
            return
        rnd.steps_done += 1
        if rnd.steps_done < rnd.plan.local_steps:
            self._schedule_step(t, w)
        elif rnd.plan.collective:
            self._arrive(t, w, worker.params() - rnd.pulled)
        else:
            self._send(t, w, worker.params() - rnd.pulled)

    def _send(self, t: float, w: int, delta: torch.Tensor) -> None:
        rnd = self.rounds[w]
        assert rnd is not None
        compressor = self.state.mode.compressor
        compress = rnd.plan.compress and compressor is not None
        payload = compressor.compress(w, delta) if compress and compressor else plain(delta)
        rnd.payload = payload
        self._schedule(t + self.push_local_s[w] + wire_s(payload.nbytes, self.cfg), _Kind.PUSH, w)

    def _push(self, t: float, w: int) -> None:
        rnd = self.rounds[w]
        assert rnd is not None and rnd.payload is not None
        # Counted when it lands, as the process backend's server counts it: a push still on
        # the wire when the run stops (its step budget reached) carried nothing (CI, stop 32:
        # 7,304 bytes counted that no commit carried, on a loaded machine).
        self.state.summaries[w].bytes_sent += rnd.payload.nbytes
        self.state.push(w, t, rnd.payload.update, rnd.payload.nbytes, rnd.pulled_version,
                        rnd.staleness, rnd.plan.compress)
        self.rounds[w] = None
        self._schedule(t, _Kind.START, w)
        for other in sorted(self.state.blocked_since):
            self._schedule(t, _Kind.START, other)

    def _arrive(self, t: float, w: int, delta: torch.Tensor) -> None:
        self.arrived[w] = (delta, t)
        if len(self.arrived) < self.cfg.workers:
            return
        state, n = self.state, self.cfg.workers
        shares = state.shares()
        mean = sum(self.arrived[v][0] * shares[v] for v in range(n))
        assert isinstance(mean, torch.Tensor)
        ring = state.ring_bytes()
        done = t + max(self.push_local_s) + 2 * (n - 1) * self.cfg.latency_s \
            + ring / self.cfg.bytes_per_s
        waits = [t - self.arrived[v][1] for v in range(n)]
        self.arrived.clear()
        state.all_reduced(done, mean, waits)
        for v in range(n):
            self.workers[v].load(state.theta)
            self.rounds[v] = None
            self._schedule(done, _Kind.START, v)

    def _evaluate_and_reschedule(self, t: float) -> None:
        self.state.evaluate(t)
        if self.state.stopped != "target":
            self._schedule(t + self.cfg.eval_every_s, _Kind.EVAL, -1)
