"""Down-sampling a data-parallel run's events into job samples.

The trainer emits one event per local step; storing each would be thousands of rows. The
`Sampler` keeps per-worker state and hands a sample (a `JobMetric`-shaped dict whose
`stages` holds one entry per worker) to `emit` every `every` global steps, at ASHL's phase
switch and at the end; with `every_s`, also once that many seconds passed since the last
one (a wall-clock run of many steps still shows, and is held against its budget, live).
Times are the trainer's: emulated seconds with the emulated backend, wall-clock seconds
with the process backend.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from heterps_core.dataparallel import TrainEvent
from heterps_core.dataparallel.events import (
    EvalEvent,
    PhaseEvent,
    ProfileEvent,
    RebalanceEvent,
    StepEvent,
    StragglerEvent,
)
from heterps_core.runtime.throughput import ThroughputMeter

SAMPLES_PER_RUN = 40  # about this many stored samples per run, whatever its length
WINDOW = 10  # step times per worker in the rolling median (the detector's default window)

Emit = Callable[[dict[str, Any]], None]


@dataclass
class _Worker:
    slowdown: float = 1.0
    batch_size: int = 0
    steps: int = 0
    times: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    loss: float | None = None
    phase: str = ""
    straggler: bool = False
    z_score: float | None = None
    staleness: int = 0
    max_staleness: int = 0
    bytes_sent: int = 0

    def entry(self, worker: int, switch: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "worker": worker, "slowdown": self.slowdown, "batch_size": self.batch_size,
            "steps": self.steps,
            "step_time_s": statistics.median(self.times) if self.times else None,
            "loss": self.loss, "phase": self.phase, "straggler": self.straggler,
            "z_score": self.z_score, "staleness": self.staleness,
            "max_staleness": self.max_staleness, "bytes_sent": self.bytes_sent,
            # ASHL's switch, once known (the stored row has no other place for it).
            "switch_s": switch["time_s"] if switch else None,
            "switch_step": switch["global_step"] if switch else None,
        }


class Sampler:
    """Down-samples the trainer's events into job samples (see the module docstring)."""

    def __init__(self, workers: int, total_steps: int, cost_per_hour: float, emit: Emit,
                 every_s: float | None = None) -> None:
        self.workers = [_Worker() for _ in range(workers)]
        self.total_steps = total_steps
        self.cost_per_hour = cost_per_hour
        self.emit = emit
        self.every = max(1, total_steps // SAMPLES_PER_RUN)
        self.every_s = every_s
        self.global_step = 0
        self.time_s = 0.0
        self.switch: dict[str, Any] | None = None
        self.evaluation: dict[str, Any] | None = None
        self._losses: list[float] = []
        self._samples = 0
        self._last = (0, 0.0, 0)  # global step, time, samples at the last emitted sample
        # The run's measured throughput, the one definition (runtime/throughput.py); the
        # trainer's clock starts at 0 (emulated or wall-clock seconds).
        self.meter = ThroughputMeter(started_at=0.0)

    def __call__(self, event: TrainEvent) -> None:
        if isinstance(event, StepEvent):
            self._step(event)
        elif isinstance(event, ProfileEvent):
            for p in event.workers:
                self.workers[p.worker].slowdown = p.slowdown
                self.workers[p.worker].batch_size = p.batch_size
        elif isinstance(event, PhaseEvent):
            self.switch = {"time_s": event.time_s, "global_step": event.global_step,
                           "previous": event.previous, "phase": event.phase,
                           "reason": event.reason}
            self.flush()
        elif isinstance(event, StragglerEvent):
            for w, (flag, z) in enumerate(zip(event.flags, event.z_scores, strict=True)):
                self.workers[w].straggler, self.workers[w].z_score = flag, z
        elif isinstance(event, EvalEvent):
            self.evaluation = {"time_s": event.time_s, "loss": event.loss, "auc": event.auc,
                               "accuracy": event.accuracy}
        elif isinstance(event, RebalanceEvent):
            for w, size in enumerate(event.batch_sizes):
                self.workers[w].batch_size = size

    def _step(self, event: StepEvent) -> None:
        w = self.workers[event.worker]
        w.steps = event.step
        w.times.append(event.step_time_s)
        w.loss, w.phase, w.straggler = event.loss, event.phase, event.straggler
        w.staleness, w.bytes_sent = event.staleness, event.bytes_sent
        w.batch_size = event.batch_size
        w.max_staleness = max(w.max_staleness, event.staleness)
        self.global_step = event.global_step
        self.time_s = max(self.time_s, event.time_s)
        self._losses.append(event.loss)
        self._samples += event.batch_size
        self.meter.add(event.time_s, event.batch_size)
        due_s = self.every_s is not None and self.time_s - self._last[1] >= self.every_s
        if self.global_step - self._last[0] >= self.every or due_s:
            self.flush()

    def flush(self) -> None:
        """Emit a sample of what happened since the last one (nothing new: nothing)."""
        step, time_s, samples = self._last
        if self.global_step == step and self.switch is None:
            return
        if self.global_step == step and self.time_s == time_s:
            return
        span = self.time_s - time_s
        run = self.meter.result()
        self.emit({
            "step": self.global_step, "total_steps": self.total_steps,
            "elapsed_s": self.time_s,
            "samples_per_s": (self._samples - samples) / span if span > 0 else 0.0,
            "window_s": span,
            # The run so far (first to last finished step), what the tile and lists show.
            "run_samples_per_s": run.per_s, "span_s": run.span_s, "startup_s": run.startup_s,
            "loss": statistics.fmean(self._losses) if self._losses else None,
            # The plan's $/hour over the run's time: an estimate, there is no cluster bill.
            "cost": self.cost_per_hour * self.time_s / 3600,
            "stages": [w.entry(i, self.switch) for i, w in enumerate(self.workers)],
            "runner": "dataparallel",
            "phase": self._phase(),
            "switch": self.switch,
            "evaluation": self.evaluation,
        })
        self._losses = []
        self._last = (self.global_step, self.time_s, self._samples)

    @property
    def samples(self) -> int:
        return self._samples

    def _phase(self) -> str:
        phases = [w.phase for w in self.workers if w.phase]
        return phases[-1] if phases else ""
