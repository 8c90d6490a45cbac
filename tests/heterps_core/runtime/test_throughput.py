"""The one definition of measured throughput: samples of the mini-batches finished after
the first, over the span from the first finished mini-batch to the last."""

from __future__ import annotations

import pytest

from heterps_core.runtime.throughput import ThroughputMeter, is_substitute, run_throughput


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


@pytest.mark.parametrize(("resource", "target", "kind", "substitute"), [
    ("gpu-t4", "cpu", "gpu", True),  # a GPU type on this CPU
    ("cpu-c6i.8xlarge", "cpu:1", "cpu", True),  # a catalogue machine on one thread here
    ("cpu-c6i.8xlarge", "remote", "cpu", False),  # an agent of that type runs it
    ("gpu-t4", "remote:cuda", "gpu", False),
    ("gpu-t4", "remote", "gpu", True),  # the agent's CPU
    ("local-1", "cpu:1", "cpu", False),  # --include-local: this machine, measured here
    ("cpu-local", "cpu", "cpu", False),  # a type of one's own is taken to be this machine
    ("cpu-local", "cuda:0", "cpu", True),
])
def test_what_counts_as_a_substitute(resource: str, target: str, kind: str,
                                     substitute: bool) -> None:
    assert is_substitute(resource, target, kind) is substitute
