"""Timing with warm-up and repeats: the median is the figure, the spread its trustworthiness.

Two things make a figure worth storing (issue 21, items 7 and 9):

- *Its spread is known.* Under `repeat_until_known` (the profile CLI and the web's profile
  work), a figure is repeated past its minimum until the median's spread, the relative
  half-width of its distribution-free 95% confidence interval (two order statistics), is at
  most the target, or the cap on repeats is reached. `median_spread` stores that half-width.
- *The cores were ours.* Beside every timed call the process's CPU time is taken: with
  `threads` threads busy for `wall_s`, the process could have had `wall_s x threads` CPU
  seconds; what it got less than that, other processes held the cores (`CpuUse.held`).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")

# "cpu" counts only the CPU time of the calling thread, so time slices taken by other
# processes on a shared machine do not count. It is exact only when all work runs on that
# thread: a CPU device with one torch thread (the autograd engine runs CPU backward there too).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}

# The median's confidence interval: 95%, which order statistics give from 6 samples on.
CONFIDENCE = 0.95
TARGET_SPREAD = 0.03  # the median known within +-3%
MAX_REPEATS = 100
# More than this share of the cores' time held by other processes and a wall-clock figure
# is refused (`heterps profile --force` stores it, labelled). A quiet 2-core machine here
# gives 3-4% (the threads' own start-up and waits); one CPU hog beside a 2-thread profile
# 38%, two hogs 52%.
HELD_LIMIT = 0.15


@dataclass(frozen=True)
class CpuUse:
    """The process's CPU seconds over a timed stretch against what its threads could have had."""

    cpu_s: float
    wall_s: float
    core_s: float  # wall_s x threads: the CPU time the threads could have had

    @property
    def share(self) -> float:
        """CPU time / (wall time x threads), at most 1."""
        return min(1.0, self.cpu_s / self.core_s) if self.core_s > 0 else 1.0

    @property
    def held(self) -> float:
        """The share of the cores' time other processes held while we timed."""
        return 1.0 - self.share

    @property
    def under_load(self) -> bool:
        return self.held > HELD_LIMIT

    def __add__(self, other: CpuUse) -> CpuUse:
        return CpuUse(self.cpu_s + other.cpu_s, self.wall_s + other.wall_s,
                      self.core_s + other.core_s)

    def describe(self) -> str:
        threads = self.core_s / self.wall_s if self.wall_s > 0 else 0.0
        return (f"other processes held {self.held:.0%} of the cores' time (CPU time "
                f"{self.cpu_s:.2f} s over {self.wall_s:.2f} s wall x {threads:.0f} "
                f"thread(s); the limit is {HELD_LIMIT:.0%})")

    def to_dict(self) -> dict[str, Any]:
        return {"cpu_s": self.cpu_s, "wall_s": self.wall_s, "core_s": self.core_s,
                "held": self.held, "under_load": self.under_load}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CpuUse:
        return cls(float(data["cpu_s"]), float(data["wall_s"]), float(data["core_s"]))

    @classmethod
    def total(cls, uses: Sequence[CpuUse | None]) -> CpuUse | None:
        known = [u for u in uses if u is not None]
        return sum(known[1:], known[0]) if known else None


@dataclass(frozen=True)
class Measurement:
    """Seconds per call over `repeats` timed calls after `warmup` untimed ones."""

    median_s: float
    min_s: float
    max_s: float
    p10_s: float
    p90_s: float
    repeats: int
    warmup: int
    clock: str = "wall"  # "wall": elapsed time; "cpu": this thread's CPU time (see CLOCKS)
    # The median's relative 95% half-width (None: fewer than 6 samples, or stored before it).
    median_spread: float | None = None
    cpu_use: CpuUse | None = None  # None on a GPU (its CPU waits) or stored before

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: the relative width of the middle 80% of the samples."""
        return (self.p90_s - self.p10_s) / self.median_s if self.median_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spread"] = self.spread
        data["cpu_use"] = self.cpu_use.to_dict() if self.cpu_use else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        spread = data.get("median_spread")
        use = data.get("cpu_use")
        return cls(**{k: data[k] for k in ("median_s", "min_s", "max_s", "p10_s", "p90_s",
                                          "repeats", "warmup")}, clock=data.get("clock", "wall"),
                   median_spread=None if spread is None else float(spread),
                   cpu_use=CpuUse.from_dict(use) if use else None)

    @classmethod
    def of(cls, samples: list[float], warmup: int, clock: str = "wall",
           cpu_use: CpuUse | None = None) -> Measurement:
        ordered = sorted(samples)
        return cls(
            median_s=statistics.median(ordered),
            min_s=ordered[0],
            max_s=ordered[-1],
            p10_s=_quantile(ordered, 0.1),
            p90_s=_quantile(ordered, 0.9),
            repeats=len(ordered),
            warmup=warmup,
            clock=clock,
            median_spread=median_spread(ordered),
            cpu_use=cpu_use,
        )


@dataclass(frozen=True)
class Precision:
    """Repeat a figure until its median's spread is at most `target`, within `max_repeats`."""

    target: float = TARGET_SPREAD
    max_repeats: int = MAX_REPEATS

    def done(self, samples: Sequence[float], minimum: int) -> bool:
        if len(samples) < minimum:
            return False
        if len(samples) >= self.max_repeats:
            return True
        spread = median_spread(sorted(samples))
        return spread is not None and spread <= self.target


_PRECISION: ContextVar[Precision | None] = ContextVar("heterps_precision", default=None)


@contextmanager
def repeat_until_known(precision: Precision | None = None) -> Iterator[Precision]:
    """Within this block every `time_repeats` repeats until its spread is known."""
    chosen = precision or Precision()
    token = _PRECISION.set(chosen)
    try:
        yield chosen
    finally:
        _PRECISION.reset(token)


def current_precision(repeats: int) -> Precision:
    """The precision in force, or exactly `repeats` repeats outside `repeat_until_known`."""
    return _PRECISION.get() or Precision(target=math.inf, max_repeats=repeats)


def time_repeats(
    prepare: Callable[[], T],
    run: Callable[[T], object],
    warmup: int,
    repeats: int,
    device: torch.device,
    clock: str = "wall",
) -> Measurement:
    """Time `run(prepare())`; only `run` is inside the timed region. `repeats` is the minimum
    (and, outside `repeat_until_known`, the number) of timed calls."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    timer = CLOCKS[clock]
    precision = current_precision(repeats)
    for _ in range(warmup):
        run(prepare())
    samples: list[float] = []
    use = CpuUse(0.0, 0.0, 0.0)
    threads = usable_threads() if device.type == "cpu" else 0
    while not precision.done(samples, repeats):
        state = prepare()
        synchronize(device)
        start, wall0, cpu0 = timer(), time.perf_counter(), time.process_time()
        run(state)
        synchronize(device)
        samples.append(timer() - start)
        wall = time.perf_counter() - wall0
        use = use + CpuUse(time.process_time() - cpu0, wall, wall * threads)
    return Measurement.of(samples, warmup, clock, use if threads else None)


def usable_threads() -> int:
    """The torch threads that can run at once: no more than the cores this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(torch.get_num_threads(), cores))


def median_interval(ordered: Sequence[float]) -> tuple[float, float] | None:
    """The distribution-free 95% confidence interval of the median of sorted samples: the
    k-th smallest and k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 2.5%.
    None when n < 6 (even the whole range covers less than 95%)."""
    n = len(ordered)
    tail = (1 - CONFIDENCE) / 2
    k, below = 0, 0.0  # below: P(B < k + 1), built term by term
    while True:
        below += math.comb(n, k) / 2**n
        if below > tail:
            break
        k += 1
    if k == 0:
        return None
    return ordered[k - 1], ordered[n - k]


def median_spread(ordered: Sequence[float]) -> float | None:
    """Half the width of `median_interval` over the median: the median is known within
    +- this fraction (95%)."""
    interval = median_interval(ordered)
    if interval is None:
        return None
    median = statistics.median(ordered)
    return (interval[1] - interval[0]) / 2 / median if median > 0 else 0.0


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks of a sorted list."""
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
