"""Timing with warm-up and repeats: the median is the figure, the spread its trustworthiness."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")

# "cpu" counts only the CPU time of the calling thread, so time slices taken by other
# processes on a shared machine do not count. It is exact only when all work runs on that
# thread: a CPU device with one torch thread (the autograd engine runs CPU backward there too).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


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

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: the relative width of the middle 80% of the samples."""
        return (self.p90_s - self.p10_s) / self.median_s if self.median_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spread"] = self.spread
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        return cls(**{k: data[k] for k in ("median_s", "min_s", "max_s", "p10_s", "p90_s",
                                          "repeats", "warmup")}, clock=data.get("clock", "wall"))

    @classmethod
    def of(cls, samples: list[float], warmup: int, clock: str = "wall") -> Measurement:
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
        )


def time_repeats(
    prepare: Callable[[], T],
    run: Callable[[T], object],
    warmup: int,
    repeats: int,
    device: torch.device,
    clock: str = "wall",
) -> Measurement:
    """Time `run(prepare())`; only `run` is inside the timed region."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    timer = CLOCKS[clock]
    for _ in range(warmup):
        run(prepare())
    samples = []
    for _ in range(repeats):
        state = prepare()
        synchronize(device)
        start = timer()
        run(state)
        synchronize(device)
        samples.append(timer() - start)
    return Measurement.of(samples, warmup, clock)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks of a sorted list."""
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
