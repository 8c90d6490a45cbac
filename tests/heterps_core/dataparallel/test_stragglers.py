from __future__ import annotations

import pytest

from heterps_core.dataparallel.events import RebalanceEvent, StragglerEvent
from heterps_core.dataparallel.stragglers import (
    StragglerDetector,
    balanced_batches,
    robust_z_scores,
)

from .conftest import Recorded, run_mode


def test_robust_z_flags_the_outlier_only() -> None:
    z = robust_z_scores((1.0, 1.1, 0.9, 1.0, 4.0))
    assert z[4] > 3.0
    assert all(abs(v) < 1.0 for v in z[:4])


def test_equal_workers_are_not_flagged_despite_zero_mad() -> None:
    z = robust_z_scores((1.0, 1.0, 1.02))
    assert max(z) < 3.0


def test_detector_uses_rolling_medians_so_one_slow_step_is_forgiven() -> None:
    detector = StragglerDetector(3, window=5, threshold=3.0)
    assert detector.report() is None  # not every worker measured yet
    for _ in range(5):
        for w, t in enumerate((1.0, 1.0, 1.0)):
            detector.record(w, t)
    detector.record(2, 10.0)  # a single hiccup
    report = detector.report()
    assert report is not None and report.flags == (False, False, False)
    for _ in range(3):
        detector.record(2, 4.0)  # now consistently slow
    report = detector.report()
    assert report is not None and report.flags == (False, False, True)
    assert report.step_times_s[2] == 4.0


@pytest.mark.slow
def test_the_slowed_worker_is_flagged_during_training(runs: dict[str, Recorded]) -> None:
    flags = [e.flags for e in runs["bsp"].of(StragglerEvent)]
    assert flags and flags[-1] == (False, False, True)


@pytest.mark.parametrize(
    ("total", "speeds"), [(192, (1.0, 1.0, 0.25)), (10, (3.0, 1.0, 1.0)), (3, (100.0, 1.0, 1.0))]
)
def test_balanced_batches_add_up_and_follow_speed(total: int, speeds: tuple[float, ...]) -> None:
    shares = balanced_batches(total, speeds)
    assert sum(shares) == total and min(shares) >= 1
    for share, speed in zip(shares, speeds, strict=True):
        assert abs(share - total * speed / sum(speeds)) <= 1.0 + (total < 10)


def test_balanced_batches_refuse_fewer_samples_than_workers() -> None:
    with pytest.raises(ValueError, match="cannot split 2 samples over 3 workers"):
        balanced_batches(2, (1.0, 1.0, 1.0))


@pytest.mark.slow
def test_dlb_rebalancing_shrinks_the_straggler_batch_and_cuts_waiting(
    runs: dict[str, Recorded],
) -> None:
    balanced = run_mode("bsp", rebalance=True, rebalance_every_s=0.05)
    sizes = balanced.of(RebalanceEvent)[-1].batch_sizes
    assert sum(sizes) == 3 * 64
    assert sizes[2] < sizes[0] / 2.5  # the 4x slower worker gets about a ninth
    assert balanced.result.workers[2].batch_size == sizes[2]
    # Everyone now finishes a step at about the same time: far less waiting per step, and the
    # straggler flag is cleared.
    def wait_per_step(r: Recorded) -> float:
        return r.result.workers[0].wait_s / r.result.workers[0].steps

    assert wait_per_step(balanced) < 0.5 * wait_per_step(runs["bsp"])
    assert balanced.of(StragglerEvent)[-1].flags == (False, False, False)
