"""What both backends' parameter servers do between rounds: admit a worker to its next round,
evaluate, flag stragglers, and work out rebalanced batch shares. One mixin, so the emulated
and the process backend cannot drift apart in what they decide and report."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch

from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.evaluation import evaluate
from heterps_core.dataparallel.events import EvalEvent, StragglerEvent
from heterps_core.dataparallel.flat import set_flat
from heterps_core.dataparallel.modes.base import RoundPlan, SyncMode, SyncView
from heterps_core.dataparallel.result import TrainResult, WorkerSummary
from heterps_core.dataparallel.stragglers import StragglerDetector, balanced_batches
from heterps_core.zoo.base import Batch, ChainModel


class ServerObservers:
    """Needs the attributes below, set by the backend's engine."""

    cfg: TrainConfig
    emit: Callable[[Any], None]
    server: ChainModel
    theta: torch.Tensor
    held_out: Batch
    global_step: int
    result: TrainResult
    detector: StragglerDetector
    flags: tuple[bool, ...]
    stopped: str
    per_sample: list[Any]
    profile_per_sample: list[float]
    last_rebalance: float
    mode: SyncMode
    clocks: list[int]
    summaries: list[WorkerSummary]
    blocked_since: dict[int, float]

    def _batch_size(self, w: int) -> int:
        """Worker w's current batch size (each backend keeps it in its own place)."""
        raise NotImplementedError

    def _rebalance(self, t: float) -> None:
        raise NotImplementedError

    def _view(self, t: float) -> SyncView:
        return SyncView(t, self.global_step, tuple(self.clocks),
                        tuple(self._step_estimate(w) for w in range(self.cfg.workers)))

    def _step_estimate(self, w: int) -> float:
        samples = self.per_sample[w]
        per_sample = statistics.median(samples) if samples else self.profile_per_sample[w]
        return per_sample * self._batch_size(w)

    def _admit(self, t: float, w: int, busy: bool = False) -> tuple[RoundPlan, int] | None:
        """Worker w's next round and its staleness, or None while it must wait (`busy`, or
        the mode says so): the wait is counted from the first refusal to the admission."""
        if self.cfg.rebalance and t - self.last_rebalance >= self.cfg.rebalance_every_s:
            self._rebalance(t)
        view = self._view(t)
        if busy or not self.mode.may_start(w, view):
            self.blocked_since.setdefault(w, t)
            return None
        summary = self.summaries[w]
        summary.wait_s += t - self.blocked_since.pop(w, t)
        plan = self.mode.plan_round(w, view)
        staleness = 0 if plan.collective else self.mode.staleness(w, view)
        summary.max_staleness = max(summary.max_staleness, staleness)
        return plan, staleness

    def _evaluate(self, t: float) -> None:
        """Held-out metrics of the server's parameters; stops the run at the target loss."""
        set_flat(self.server, self.theta)
        held = evaluate(self.server, self.held_out)
        event = EvalEvent(t, self.global_step, held.loss, held.auc, held.accuracy)
        self.result.evals.append(event)
        self.emit(event)
        target = self.cfg.target_loss
        if self.cfg.stop_at_target and target is not None and held.loss <= target:
            self.stopped = "target"

    def _update_flags(self, t: float) -> None:
        report = self.detector.report()
        if report is None or report.flags == self.flags:
            return
        self.flags = report.flags
        self.emit(StragglerEvent(t, report.flags, report.z_scores, report.step_times_s))

    def _rebalanced(self, t: float, current: tuple[int, ...]) -> tuple[int, ...] | None:
        """DLB: batch shares in proportion to measured speed, or None when nothing changes."""
        self.last_rebalance = t
        if any(not samples for samples in self.per_sample):
            return None
        speeds = tuple(1.0 / statistics.median(s) for s in self.per_sample)
        sizes = balanced_batches(self.cfg.batch_size * self.cfg.workers, speeds)
        return None if sizes == current else sizes
