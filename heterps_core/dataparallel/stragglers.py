"""Straggler handling: detection from rolling step times, DLB-style batch rebalancing.

Detection (after EP4DDL): each worker's rolling median step time is compared with the other
workers' through a robust z-score, 0.6745 * (x - median) / MAD. The MAD is floored at
`mad_floor` of the median so that equal workers (MAD 0) do not make every tiny difference
infinite. Rebalancing (after DLB): batch shares in proportion to measured samples per second,
so a slow worker gets a smaller batch and finishes its step with the others.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class StragglerReport:
    flags: tuple[bool, ...]
    z_scores: tuple[float, ...]
    step_times_s: tuple[float, ...]


class StragglerDetector:
    def __init__(
        self, workers: int, window: int = 10, threshold: float = 3.0, mad_floor: float = 0.1
    ) -> None:
        self.threshold = threshold
        self.mad_floor = mad_floor
        self._times: list[deque[float]] = [deque(maxlen=window) for _ in range(workers)]

    def record(self, worker: int, step_time_s: float) -> None:
        self._times[worker].append(step_time_s)

    def rolling(self) -> tuple[float, ...] | None:
        """Rolling median step time per worker; None until every worker has a sample."""
        if any(not times for times in self._times):
            return None
        return tuple(statistics.median(times) for times in self._times)

    def report(self) -> StragglerReport | None:
        rolling = self.rolling()
        if rolling is None:
            return None
        z = robust_z_scores(rolling, self.mad_floor)
        return StragglerReport(tuple(s > self.threshold for s in z), z, rolling)


def robust_z_scores(values: tuple[float, ...], mad_floor: float = 0.1) -> tuple[float, ...]:
    """0.6745 * (x - median) / MAD for each value, the MAD floored at `mad_floor` * median."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    scale = max(mad, mad_floor * abs(median), 1e-12)
    return tuple(0.6745 * (v - median) / scale for v in values)


def balanced_batches(total: int, samples_per_s: tuple[float, ...]) -> tuple[int, ...]:
    """Split `total` samples in proportion to speed; every worker keeps at least one sample.

    Largest-remainder rounding, so the shares always add up to `total`.
    """
    n = len(samples_per_s)
    if total < n:
        raise ValueError(f"cannot split {total} samples over {n} workers")
    weight = sum(samples_per_s)
    exact = [total * s / weight for s in samples_per_s]
    shares = [max(1, int(e)) for e in exact]
    order = sorted(range(n), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    i = 0
    while sum(shares) < total:
        shares[order[i % n]] += 1
        i += 1
    while sum(shares) > total:
        largest = max(range(n), key=lambda j: shares[j])
        shares[largest] -= 1
    return tuple(shares)
