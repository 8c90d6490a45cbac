import math
import time

import pytest
import torch

from heterps_core.profiler.measure import (
    HELD_LIMIT,
    CpuUse,
    Measurement,
    Precision,
    median_interval,
    median_spread,
    repeat_until_known,
    time_repeats,
)


def test_quantiles_and_spread():
    m = Measurement.of([5.0, 1.0, 3.0, 2.0, 4.0], warmup=2)
    assert (m.median_s, m.min_s, m.max_s) == (3.0, 1.0, 5.0)
    assert m.p10_s == pytest.approx(1.4) and m.p90_s == pytest.approx(4.6)
    assert m.spread == pytest.approx((4.6 - 1.4) / 3.0)
    assert Measurement.from_dict(m.to_dict()) == m
    assert m.to_dict()["spread"] == pytest.approx(m.spread)


def test_only_run_is_timed_and_warmup_runs_are_not_counted():
    calls = []

    def prepare():
        time.sleep(0.01)
        return len(calls)

    m = time_repeats(prepare, calls.append, warmup=2, repeats=3, device=torch.device("cpu"))
    assert len(calls) == 5 and m.repeats == 3 and m.warmup == 2
    assert m.max_s < 0.005  # the 10 ms of prepare() is outside the timed region


def test_repeats_must_be_positive():
    with pytest.raises(ValueError):
        time_repeats(lambda: None, lambda _: None, 0, 0, torch.device("cpu"))


def test_cpu_clock_ignores_time_spent_off_the_cpu():
    m = time_repeats(lambda: None, lambda _: time.sleep(0.02), warmup=0, repeats=2,
                     device=torch.device("cpu"), clock="cpu")
    assert m.clock == "cpu" and m.max_s < 0.01  # sleeping uses no CPU time
    wall = time_repeats(lambda: None, lambda _: time.sleep(0.02), warmup=0, repeats=2,
                        device=torch.device("cpu"))
    assert wall.clock == "wall" and wall.min_s >= 0.019
    assert Measurement.from_dict(m.to_dict()).clock == "cpu"


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median < x_(n-k+1)) for n samples of a continuous distribution."""
    below = sum(math.comb(n, i) for i in range(k)) / 2**n
    return 1 - 2 * below


@pytest.mark.parametrize("n", [6, 7, 10, 20, 33, 50, 100])
def test_median_interval_is_the_narrowest_order_statistic_interval_covering_95(n: int) -> None:
    low, high = median_interval([float(i) for i in range(1, n + 1)])
    k = int(low)
    assert high == n - k + 1  # symmetric ranks
    assert _coverage(n, k) >= 0.95 > _coverage(n, k + 1)
    assert median_interval([1.0] * 5) is None  # five samples cover 93.75% at most


def test_median_interval_matches_published_ranks() -> None:
    # Conover, Practical Nonparametric Statistics: ranks 2/9 for n = 10, 40/61 for n = 100
    assert median_interval([float(i) for i in range(1, 11)]) == (2.0, 9.0)
    assert median_interval([float(i) for i in range(1, 101)]) == (40.0, 61.0)


def test_median_spread_is_the_relative_half_width() -> None:
    samples = [9.0, 9.5, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.5, 11.0]
    assert median_spread(samples) == pytest.approx(0.05)  # ranks 2 and 9: 9.5 .. 10.5
    m = Measurement.of(samples, warmup=0)
    assert m.median_spread == pytest.approx(0.05)
    assert Measurement.from_dict(m.to_dict()) == m


def test_older_measurements_load_without_spread_or_cpu_use() -> None:
    old = {"median_s": 1.0, "min_s": 1.0, "max_s": 1.0, "p10_s": 1.0, "p90_s": 1.0,
           "repeats": 3, "warmup": 1, "spread": 0.0}
    m = Measurement.from_dict(old)
    assert m.median_spread is None and m.cpu_use is None


def test_repeats_until_the_median_is_known_or_the_cap() -> None:
    cpu = torch.device("cpu")
    with repeat_until_known(Precision(target=0.5, max_repeats=50)):
        known = time_repeats(lambda: None, lambda _: time.sleep(0.005), 0, 1, cpu)
    assert 6 <= known.repeats < 50 and known.median_spread is not None
    assert known.median_spread <= 0.5
    with repeat_until_known(Precision(target=1e-12, max_repeats=9)):
        capped = time_repeats(lambda: None, lambda _: sum(range(1000)), 0, 2, cpu)
    assert capped.repeats == 9  # never known that well: the cap
    outside = time_repeats(lambda: None, lambda _: None, 0, 4, cpu)
    assert outside.repeats == 4  # outside the block, exactly the repeats asked


def test_cpu_use_compares_the_process_cpu_time_with_the_cores_time() -> None:
    # One thread (conftest) asleep for the whole timed call: the process used almost none of
    # the core it could have had, which is what another process holding it looks like.
    idle = time_repeats(lambda: None, lambda _: time.sleep(0.02), 0, 3, torch.device("cpu"))
    assert idle.cpu_use is not None
    assert idle.cpu_use.wall_s >= 0.06 and idle.cpu_use.core_s == pytest.approx(
        idle.cpu_use.wall_s)
    assert idle.cpu_use.held > 0.9 and idle.cpu_use.under_load
    assert "held" in idle.cpu_use.describe()
    assert Measurement.from_dict(idle.to_dict()).cpu_use == idle.cpu_use


def test_cpu_use_adds_up_and_judges_against_the_limit() -> None:
    total = CpuUse.total([CpuUse(0.9, 1.0, 1.0), None, CpuUse(1.0, 1.0, 2.0)])
    assert total == CpuUse(1.9, 2.0, 3.0)
    assert total.held == pytest.approx(1 - 1.9 / 3.0) and total.under_load
    assert not CpuUse(1.0 - HELD_LIMIT / 2, 1.0, 1.0).under_load
    assert CpuUse.total([None]) is None
