"""Live metrics: workers write small chunks into the rendezvous store, the launcher folds
them into `MetricsSample`s and hands each to one `MetricsSink`.

The same sink type serves the CLI's progress line, the Celery task (web team) and tests.
The sample types themselves are in samples.py (re-exported here).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from heterps_core import rendezvous as keys
from heterps_core.runtime.samples import (
    MetricsSample,
    MetricsSink,
    StageMetrics,
    no_metrics,
    progress_sink,
)
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.throughput import RunThroughput, run_throughput
from heterps_core.zoo.evaluation import HeldOut

__all__ = ["Clock", "Collector", "MetricsSample", "MetricsSink", "Reporter", "StageMetrics",
           "StoreLike", "no_metrics", "progress_sink"]


class Clock:
    """Busy vs idle time of one process: waits on peers are idle, everything else busy."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start counting now (after start-up, which is neither busy nor idle training time)."""
        self.start = time.perf_counter()
        self.idle_s = 0.0

    @contextmanager
    def idle(self) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.idle_s += time.perf_counter() - t0

    @property
    def busy_s(self) -> float:
        return time.perf_counter() - self.start - self.idle_s


class StoreLike(Protocol):
    def set(self, key: str, value: str) -> None: ...
    def get(self, key: str) -> bytes: ...
    def check(self, keys: list[str]) -> bool: ...
    def delete_key(self, key: str) -> bool: ...


class Reporter:
    """Worker side: buffers finished mini-batches and flushes them to the store periodically."""

    def __init__(self, store: StoreLike, rank: int, clock: Clock, interval_s: float) -> None:
        self.store = store
        self.rank = rank
        self.clock = clock
        self.interval_s = interval_s
        self._seq = 0
        self._done: list[list[float]] = []
        self._held: list[list[float | None]] = []
        self._last_flush = time.perf_counter()

    def step_done(self, mini_batch: int, loss: float | None) -> None:
        self._done.append([mini_batch, float("nan") if loss is None else loss, time.time()])
        if time.perf_counter() - self._last_flush >= self.interval_s:
            self.flush()

    def held_out(self, result: HeldOut) -> None:
        """A held-out evaluation (the last stage's), sent at once: they are rare."""
        self._held.append([result.step, result.samples, result.logloss, result.auc])
        self.flush()

    def flush(self) -> None:
        chunk = {"done": self._done, "busy": self.clock.busy_s, "idle": self.clock.idle_s,
                 "held_out": self._held}
        self.store.set(keys.metrics_chunk(self.rank, self._seq), json.dumps(chunk))
        self._seq += 1
        self.store.set(keys.metrics_count(self.rank), str(self._seq))
        self._done = []
        self._held = []
        self._last_flush = time.perf_counter()


@dataclass
class _RankState:
    seen: int = 0
    busy: float = 0.0
    idle: float = 0.0


@dataclass
class Collector:
    """Launcher side: reads every rank's chunks and builds samples for the sink."""

    store: StoreLike
    spec: JobSpec
    cost_per_hour: float
    sink: MetricsSink = no_metrics
    clock: Callable[[], float] = time.perf_counter
    predicted: tuple[float | None, ...] = ()  # the plan's per-unit time of each stage
    losses: dict[int, float] = field(default_factory=dict)
    held_out: list[dict[str, Any]] = field(default_factory=list)  # in step order
    finish_times: dict[int, float] = field(default_factory=dict)
    _ranks: dict[int, _RankState] = field(default_factory=dict)
    _window: dict[int, tuple[float, float]] = field(default_factory=dict)
    _last_emit: float = 0.0
    _last_step: int = 0
    _window_losses: list[float] = field(default_factory=list)
    _started: float = 0.0
    _started_wall: float = 0.0  # the workers' finish times are wall-clock

    def __post_init__(self) -> None:
        self._started = self._last_emit = self.clock()
        self._started_wall = time.time()
        self._last_step = self.spec.start_step
        self._ranks = {r.rank: _RankState() for r in self.spec.ranks if r.role == "stage"}
        self._last_ranks = set(self.spec.stage_ranks(len(self.spec.stages) - 1))

    @property
    def step(self) -> int:
        return self.spec.start_step + len(self.finish_times)

    def poll(self) -> None:
        for rank, state in self._ranks.items():
            key = keys.metrics_count(rank)
            if not self.store.check([key]):
                continue
            count = int(self.store.get(key))
            while state.seen < count:
                chunk_key = keys.metrics_chunk(rank, state.seen)
                chunk = json.loads(self.store.get(chunk_key))
                self.store.delete_key(chunk_key)
                state.seen += 1
                state.busy, state.idle = chunk["busy"], chunk["idle"]
                if rank in self._last_ranks:
                    for m, loss, t in chunk["done"]:
                        self.losses[int(m)] = loss
                        self.finish_times[int(m)] = t
                        self._window_losses.append(loss)
                    for step, samples, logloss, auc in chunk.get("held_out", []):
                        self.held_out.append({"step": int(step), "samples": int(samples),
                                              "logloss": logloss, "auc": auc})

    def emit(self, final: bool = False) -> MetricsSample:
        now = self.clock()
        window = max(now - self._last_emit, 1e-9)
        step = self.step
        samples = (step - self._last_step) * self.spec.train.batch_size
        loss = sum(self._window_losses) / len(self._window_losses) if self._window_losses else None
        stages = []
        for s, stage in enumerate(self.spec.stages):
            busy = idle = 0.0
            for rank in self.spec.stage_ranks(s):
                state = self._ranks[rank]
                prev_busy, prev_idle = self._window.get(rank, (0.0, 0.0))
                busy += state.busy - prev_busy
                idle += state.idle - prev_idle
                self._window[rank] = (state.busy, state.idle)
            planned = self.predicted[s] if s < len(self.predicted) else None
            stages.append(StageMetrics(
                s + 1, stage.resource, stage.units, busy, idle,
                busy_total_s=sum(self._ranks[r].busy for r in self.spec.stage_ranks(s)),
                idle_total_s=sum(self._ranks[r].idle for r in self.spec.stage_ranks(s)),
                batches=len(self.finish_times),
                predicted_time_per_batch_s=planned,
            ))
        elapsed = now - self._started
        run = self.run_throughput()
        sample = MetricsSample(
            step=step,
            total_steps=self.spec.train.steps,
            elapsed_s=elapsed,
            samples_per_s=samples / window,
            loss=loss,
            stages=tuple(stages),
            cost=self.cost_per_hour * elapsed / 3600,
            cost_per_hour=self.cost_per_hour,
            final=final,
            window_s=window,
            run_samples_per_s=run.per_s,
            span_s=run.span_s,
            startup_s=run.startup_s,
            held_out=self.held_out[-1] if self.held_out else None,
        )
        self._last_emit, self._last_step, self._window_losses = now, step, []
        self.sink(sample)
        return sample

    def run_throughput(self) -> RunThroughput:
        """The run's measured throughput so far: the one definition (`throughput.py`)."""
        return run_throughput(self.finish_times.values(), self.spec.train.batch_size,
                              self._started_wall)

    def steady_throughput(self) -> float | None:
        """Samples/s between the first and the last finished mini-batch (start-up excluded)."""
        return self.run_throughput().per_s

    def totals(self) -> tuple[dict[int, float], dict[int, float]]:
        """Cumulative busy and idle seconds per stage (1-based), summed over replicas."""
        busy: dict[int, float] = {}
        idle: dict[int, float] = {}
        for s in range(len(self.spec.stages)):
            busy[s + 1] = sum(self._ranks[r].busy for r in self.spec.stage_ranks(s))
            idle[s + 1] = sum(self._ranks[r].idle for r in self.spec.stage_ranks(s))
        return busy, idle
