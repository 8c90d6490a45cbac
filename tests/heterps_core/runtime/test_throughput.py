"""The one definition of measured throughput: samples of the mini-batches finished after
the first, over the span from the first finished mini-batch to the last."""

from __future__ import annotations

import pytest

from heterps_core.runtime.throughput import ThroughputMeter, run_throughput


def test_equal_batches_start_up_apart() -> None:
    run = run_throughput([10.0, 10.5, 11.0, 12.0], batch_size=100, started_at=4.0)
    assert (run.samples, run.span_s, run.startup_s, run.batches) == (300, 2.0, 6.0, 4)
    assert run.per_s == pytest.approx(150.0)


def test_batches_of_different_sizes_in_any_order() -> None:
    # Data-parallel workers finish out of order and may carry rebalanced batches.
    meter = ThroughputMeter(started_at=0.0)
    for t, size in [(3.0, 40), (1.0, 64), (2.0, 32), (5.0, 64)]:
        meter.add(t, size)
    run = meter.result()
    assert run.samples == 40 + 32 + 64  # all but the first to finish (64 at t=1)
    assert run.span_s == pytest.approx(4.0) and run.startup_s == pytest.approx(1.0)
    assert run.per_s == pytest.approx(136 / 4.0)


def test_fewer_than_two_batches_have_no_throughput() -> None:
    assert run_throughput([], 10).per_s is None
    one = run_throughput([2.0], 10, started_at=1.0)
    assert one.per_s is None and one.startup_s == pytest.approx(1.0) and one.batches == 1
