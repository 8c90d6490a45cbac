import time

import pytest
import torch

from heterps_core.profiler.measure import Measurement, time_repeats


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
