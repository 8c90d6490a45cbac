"""The documented range of every numeric input: one table, checked by the core's validators
and read by the web forms, the API serializers and the CLI (docs/limits.md lists it).

The bounds keep work finite: a throughput target of 1e308 would ask the solvers for more
units than any cluster has and a frontier sweep that never ends; a batch of 10**9 samples
would exhaust memory before the first step. They are generous for real use and tight
enough that the longest solve stays within the work budgets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heterps_core.errors import InstanceError


@dataclass(frozen=True)
class Limit:
    name: str
    low: float
    high: float
    unit: str
    integer: bool = False
    low_inclusive: bool = True  # False: the value must be greater than `low`

    def check(self, value: Any, where: str | None = None,
              error: Callable[[str, str], Exception] = InstanceError) -> Any:
        """`value` if it is a number in range (an int for integer limits), else `error`
        naming `where` (default: the limit's name), the problem and the range."""
        where = where or self.name
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise error(where, f"must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise error(where, f"must be finite, got {value!r}")
        # The low side in the words the core always used ("greater than 0").
        if value <= 0 and (self.low > 0 or not self.low_inclusive):
            raise error(where, f"must be greater than 0, got {value!r}")
        if value < 0 and self.low == 0:
            raise error(where, f"must not be negative, got {value!r}")
        if self.integer and value != int(value):
            raise error(where, f"must be a whole number, got {value!r}")
        too_low = value < self.low if self.low_inclusive else value <= self.low
        if too_low or value > self.high:
            raise error(where, f"must be {self.describe()} ({self.unit}), got {value!r}")
        return int(value) if self.integer else float(value)

    def describe(self) -> str:
        low = _fmt(self.low)
        high = _fmt(self.high)
        if self.low_inclusive:
            return f"between {low} and {high}"
        return f"greater than {low} and at most {high}"


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def _limit(name: str, low: float, high: float, unit: str, integer: bool = False,
           low_inclusive: bool = True) -> Limit:
    return Limit(name, low, high, unit, integer, low_inclusive)


# The table. Adding an input = one line here and a reference from its validator.
LIMITS: dict[str, Limit] = {limit.name: limit for limit in (
    _limit("batch_size", 1, 65_536, "samples per mini-batch", integer=True),
    _limit("micro_batches", 1, 1_024, "micro-batches per mini-batch", integer=True),
    _limit("steps", 1, 10_000_000, "training steps", integer=True),
    _limit("lr", 0, 10, "learning rate", low_inclusive=False),
    _limit("workers", 1, 256, "data-parallel workers", integer=True),
    _limit("threads", 1, 1_024, "CPU threads per unit (cpu:N)", integer=True),
    _limit("gpu_index", 0, 1_023, "GPU index (cuda:N)", integer=True),
    _limit("throughput_target", 0, 1e9, "samples/s", low_inclusive=False),
    _limit("samples", 1, 1e15, "samples to train on"),
    _limit("price_per_hour", 0, 10_000, "$ per unit-hour", low_inclusive=False),
    _limit("count", 1, 1_000_000, "units of one resource type", integer=True),
    _limit("memory_gb", 0, 1e6, "GB per unit", low_inclusive=False),
    _limit("network_gbps", 0, 1e5, "Gbit/s per unit", low_inclusive=False),
    _limit("spot_price", 0, 10_000, "$ per spot unit-hour", low_inclusive=False),
    _limit("interruptions_per_hour", 0, 60, "spot interruptions per unit-hour",
           low_inclusive=False),
    _limit("restart_s", 0, 86_400, "seconds to replace an interrupted unit"),
    _limit("max_hourly_cost", 0, 1e7, "$ per hour", low_inclusive=False),
    _limit("max_total_cost", 0, 1e12, "$ in total", low_inclusive=False),
    _limit("budget", 0, 1e12, "$ over all runs", low_inclusive=False),
    _limit("budget_s", 0.1, 600, "CPU seconds of solver or training time"),
    _limit("max_updates", 1, 20_000, "policy updates", integer=True),
    _limit("rl_samples", 2, 1_024, "plans sampled per update", integer=True),
    _limit("repeats", 1, 100, "profiler repeats per layer", integer=True),
    _limit("seed", 0, 2**31 - 1, "random seed", integer=True),
    _limit("run", 1, 1_000_000, "run number", integer=True),
    _limit("max_restarts", 0, 100, "automatic restarts after spot notices", integer=True),
)}


def limit(name: str) -> Limit:
    return LIMITS[name]


def check(name: str, value: Any, where: str | None = None,
          error: Callable[[str, str], Exception] = InstanceError) -> Any:
    """`LIMITS[name].check(value, where, error)`."""
    return LIMITS[name].check(value, where, error)


def argument(name: str) -> Callable[[str], Any]:
    """An argparse `type=` for the input `name`: parses the text and checks the range, so
    the CLI refuses what the pages and the API refuse, with the same sentence."""
    import argparse

    limit = LIMITS[name]

    def parse(text: str) -> Any:
        try:
            value: Any = int(text) if limit.integer else float(text)
        except ValueError:
            kind = "a whole number" if limit.integer else "a number"
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None
        try:
            return limit.check(value, name)
        except InstanceError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    parse.__name__ = name  # argparse names the type in its messages
    return parse
