"""The parameter server's state, and every decision made on it, held by both backends.

The emulated backend (`emulated.py`) and the process backend (`process/server.py`) each
keep only their own transport: an event heap on an emulated clock, or sockets to worker
processes on the wall clock. What the server knows (its parameter vector, which entries
each worker has not pulled, versions and clocks, per-worker summaries, straggler flags,
batch shares) and what it decides (may a worker start a round, what a step, a push or an
all-reduce changes, when to evaluate, rebalance or switch phase) lives here once, so the
two backends cannot drift apart in what they decide and report.
"""

from __future__ import annotations

import statistics
import time
from collections import deque

import torch

from heterps_core.dataparallel.compression import VALUE_BYTES
from heterps_core.dataparallel.evaluation import evaluate
from heterps_core.dataparallel.events import (
    CommitEvent,
    EvalEvent,
    PhaseEvent,
    ProfileEvent,
    RebalanceEvent,
    StepEvent,
    StragglerEvent,
    WorkerProfile,
)
from heterps_core.dataparallel.flat import get_flat, set_flat
from heterps_core.dataparallel.job import DataParallelRun
from heterps_core.dataparallel.modes.base import RoundPlan, SyncView
from heterps_core.dataparallel.result import TrainResult, WorkerSummary
from heterps_core.dataparallel.rows import remote_tables
from heterps_core.dataparallel.stragglers import StragglerDetector, balanced_batches
from heterps_core.zoo.base import ChainModel


class ServerState:
    """The server side of one run; `begin(profile)` before the first round, `finish` after."""

    def __init__(self, run: DataParallelRun, server: ChainModel | None = None) -> None:
        """`server`: the server's model, when not `run.build()` (the process backend's,
        whose tables are remote: its parameter vector is then the dense layers only)."""
        cfg = run.config
        self.run, self.cfg, self.mode, self.emit = run, cfg, run.mode, run.metrics
        self.server = run.build() if server is None else server
        self.tables = remote_tables(self.server)
        self.held_out = run.held_out()
        self.theta = get_flat(self.server)
        self.dense_bytes = self.theta.numel() * VALUE_BYTES
        # stale[w, i]: entry i changed on the server since worker w last pulled.
        self.stale = torch.zeros(cfg.workers, self.theta.numel(), dtype=torch.bool)
        self.version = 0
        self.clocks = [0] * cfg.workers
        self.batch_sizes = [cfg.batch_size] * cfg.workers
        self.blocked_since: dict[int, float] = {}
        self.busy: set[int] = set()  # workers inside an all-reduce: no rebalance meanwhile
        self.detector = StragglerDetector(cfg.workers, cfg.straggler_window, cfg.straggler_z)
        self.flags = tuple(False for _ in range(cfg.workers))
        self.per_sample: list[deque[float]] = [
            deque(maxlen=cfg.straggler_window) for _ in range(cfg.workers)
        ]
        self.global_step = 0
        self.stopped = ""
        self.last_rebalance = 0.0
        self.summaries = [
            WorkerSummary(w, cfg.slowdown(w), batch_size=cfg.batch_size)
            for w in range(cfg.workers)
        ]
        self.profile: tuple[WorkerProfile, ...] = ()
        self.profile_per_sample: list[float] = []
        self.result = TrainResult(self.mode.name, dict(self.mode.settings()), cfg.to_dict(), (),
                                  self.summaries)
        self._wall = time.perf_counter()

    # -- the run's frame -------------------------------------------------------------------

    def begin(self, profile: tuple[WorkerProfile, ...]) -> None:
        self.profile = profile
        self.emit(ProfileEvent(profile))
        self.profile_per_sample = [p.compute_s / p.batch_size for p in profile]
        self.result = TrainResult(self.mode.name, dict(self.mode.settings()), self.cfg.to_dict(),
                                  profile, self.summaries)

    def finish(self, now: float) -> TrainResult:
        if not self.result.evals or self.result.evals[-1].time_s < now:
            self.evaluate(now)
        self.result.time_s = now
        self.result.global_steps = self.global_step
        self.result.stopped = self.stopped or "idle"
        self.result.wall_s = time.perf_counter() - self._wall
        return self.result

    def should_stop(self, now: float) -> bool:
        """Cancelled or out of time: sets `stopped` and says so."""
        if self.run.cancelled():
            self.stopped = "cancelled"
        elif now >= self.cfg.duration_s:
            self.stopped = "duration"
        return bool(self.stopped)

    # -- rounds ----------------------------------------------------------------------------

    def view(self, t: float) -> SyncView:
        return SyncView(t, self.global_step, tuple(self.clocks),
                        tuple(self.step_estimate(w) for w in range(self.cfg.workers)))

    def step_estimate(self, w: int) -> float:
        samples = self.per_sample[w]
        per_sample = statistics.median(samples) if samples else self.profile_per_sample[w]
        return per_sample * self.batch_sizes[w]

    def admit(self, t: float, w: int, busy: bool = False) -> tuple[RoundPlan, int] | None:
        """Worker w's next round and its staleness, or None while it must wait (`busy`, or
        the mode says so): the wait is counted from the first refusal to the admission."""
        if self.cfg.rebalance and t - self.last_rebalance >= self.cfg.rebalance_every_s:
            self.rebalance(t)
        view = self.view(t)
        if busy or not self.mode.may_start(w, view):
            self.blocked_since.setdefault(w, t)
            return None
        summary = self.summaries[w]
        summary.wait_s += t - self.blocked_since.pop(w, t)
        plan = self.mode.plan_round(w, view)
        staleness = 0 if plan.collective else self.mode.staleness(w, view)
        summary.max_staleness = max(summary.max_staleness, staleness)
        return plan, staleness

    def step(self, w: int, t: float, step_time: float, batch: int, loss: float,
             staleness: int) -> None:
        """Worker w finished a local step: bookkeeping, its event, the mode's loss test."""
        summary = self.summaries[w]
        self.global_step += 1
        summary.steps += 1
        summary.compute_s += step_time
        summary.batch_size = batch
        self.per_sample[w].append(step_time / batch)
        self.detector.record(w, step_time)
        self._update_flags(t)
        self.emit(StepEvent(w, summary.steps, self.global_step, t, step_time, loss, staleness,
                            summary.bytes_sent, self.mode.phase(), self.flags[w], batch))
        previous = self.mode.phase()
        reason = self.mode.observe_loss(loss, self.view(t))
        if reason is not None:
            event = PhaseEvent(t, self.global_step, previous, self.mode.phase(), reason, loss)
            self.result.switch = event
            self.emit(event)
        if self.cfg.max_steps is not None and self.global_step >= self.cfg.max_steps:
            self.stopped = "max_steps"

    def push(self, w: int, t: float, update: torch.Tensor, nbytes: int, pulled_version: int,
             staleness: int, compressed: bool) -> None:
        """Worker w's asynchronous update lands on the server."""
        self.theta.add_(update)
        self.stale |= update != 0
        lag = self.version - pulled_version
        self.version += 1
        self.clocks[w] += 1
        self.summaries[w].commits += 1
        self.emit(CommitEvent(w, t, nbytes, lag, staleness, self.mode.phase(), compressed))

    def all_reduced(self, t: float, mean: torch.Tensor, waits: list[float]) -> None:
        """Every worker's update, averaged by an all-reduce (worker w waited `waits[w]`)."""
        n = self.cfg.workers
        self.theta.add_(mean)
        self.version += 1
        ring = self.ring_bytes()
        for v in range(n):
            summary = self.summaries[v]
            summary.wait_s += waits[v]
            summary.bytes_sent += ring
            summary.bytes_received += ring
            summary.commits += 1
            self.clocks[v] += 1
        self.stale[:] = False
        self.busy.clear()
        self.emit(CommitEvent(-1, t, ring, 0, 0, self.mode.phase(), False))

    def ring_bytes(self) -> int:
        """What a ring all-reduce of the dense model sends (and receives) per worker."""
        n = self.cfg.workers
        return int(2 * (n - 1) / n * self.dense_bytes)

    def shares(self) -> list[float]:
        """Each worker's batch share: rebalanced batches average like one big batch."""
        total = sum(self.batch_sizes)
        return [size / total for size in self.batch_sizes]

    # -- observers -------------------------------------------------------------------------

    def evaluate(self, t: float) -> None:
        """Held-out metrics of the server's parameters; stops the run at the target loss."""
        set_flat(self.server, self.theta)
        for table in self.tables:
            table.begin(None)  # look the rows up again, as they are now
        held = evaluate(self.server, self.held_out, self.global_step)
        event = EvalEvent(t, self.global_step, held.logloss, held.auc, held.accuracy)
        self.result.evals.append(event)
        self.emit(event)
        target = self.cfg.target_loss
        if self.cfg.stop_at_target and target is not None and held.logloss <= target:
            self.stopped = "target"

    def rebalance(self, t: float) -> None:
        """DLB: batch shares in proportion to measured speed (never inside an all-reduce:
        its shares must add up to 1)."""
        if self.busy:
            return  # asked again at the next admission
        self.last_rebalance = t
        if any(not samples for samples in self.per_sample):
            return
        speeds = tuple(1.0 / statistics.median(s) for s in self.per_sample)
        sizes = balanced_batches(self.cfg.batch_size * self.cfg.workers, speeds)
        if sizes == tuple(self.batch_sizes):
            return
        self.batch_sizes = list(sizes)
        self.emit(RebalanceEvent(t, sizes))

    def _update_flags(self, t: float) -> None:
        report = self.detector.report()
        if report is None or report.flags == self.flags:
            return
        self.flags = report.flags
        self.emit(StragglerEvent(t, report.flags, report.z_scores, report.step_times_s))
