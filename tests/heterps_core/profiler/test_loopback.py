"""The loopback link's measurement: two plain processes, repeated until the median is known."""

from __future__ import annotations

import pytest

from heterps_core.profiler.loopback import loopback
from heterps_core.profiler.measure import Precision, repeat_until_known


@pytest.mark.slow
def test_the_loopback_repeats_until_its_median_is_known() -> None:
    with repeat_until_known(Precision(target=0.5, max_repeats=10)):
        link = loopback(0.1, rounds=10)
    assert link.gbps > 0 and link.spread is not None
    assert 10 <= link.rounds <= 100 and (link.spread <= 0.5 or link.rounds > 90)
    assert loopback(0.1, rounds=8).rounds == 8  # outside the block: the rounds asked
