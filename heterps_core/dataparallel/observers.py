"""What both backends' parameter servers do between rounds: evaluate, flag stragglers, and
work out rebalanced batch shares. One mixin, so the emulated and the process backend cannot
drift apart in what they report."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch

from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.evaluation import evaluate
from heterps_core.dataparallel.events import EvalEvent, StragglerEvent
from heterps_core.dataparallel.flat import set_flat
from heterps_core.dataparallel.result import TrainResult
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
    last_rebalance: float

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
