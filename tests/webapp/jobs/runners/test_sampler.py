"""The data-parallel sampler: a sample every `every` global steps, and with `every_s` also
once that much run time passed (a wall-clock run of millions of steps stays live)."""

from __future__ import annotations

from typing import Any

from heterps_core.dataparallel.events import StepEvent
from webapp.jobs.runners.sampler import Sampler


def steps(sampler: Sampler, count: int, seconds_each: float) -> None:
    for i in range(1, count + 1):
        sampler(StepEvent(worker=0, step=i, global_step=i, time_s=i * seconds_each,
                          step_time_s=seconds_each, loss=0.5, staleness=0, bytes_sent=0,
                          phase="asp", straggler=False, batch_size=10))


def test_a_long_run_samples_by_time_as_well_as_by_steps() -> None:
    by_steps: list[dict[str, Any]] = []
    timed: list[dict[str, Any]] = []
    steps(Sampler(1, 10_000_000, 3.6, by_steps.append), 100, 0.1)
    steps(Sampler(1, 10_000_000, 3.6, timed.append, every_s=0.5), 100, 0.1)
    assert by_steps == []  # 10M steps / 40 samples: one every 250,000 steps
    assert [s["step"] for s in timed] == list(range(5, 101, 5))  # every 0.5 s of run time
    assert timed[-1]["cost"] == 3.6 * 10.0 / 3600


def test_a_short_run_still_samples_by_steps() -> None:
    out: list[dict[str, Any]] = []
    steps(Sampler(1, 80, 1.0, out.append, every_s=60.0), 80, 0.01)
    assert [s["step"] for s in out] == list(range(2, 81, 2))
