"""The async hot-row cache on real processes (ps/cache.py; docs/runtime.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.launcher import Launcher, RunConfig, launch

STEPS = 60


def _pulled(result) -> int:
    return sum(int(s.get("rows_pulled", 0)) for s in result.process_stats.values())


@pytest.mark.slow
def test_the_cache_pulls_fewer_rows_within_its_staleness_and_still_learns(
    two_stage_plan, jobs
) -> None:
    train = jobs.settings(STEPS, sync="async")
    plain = launch(RunConfig(plan=two_stage_plan, train=train))
    # Staleness 0 refreshes every round: the same run, loss for loss (one writer, so async
    # is repeatable here: its requests reach the server in one order).
    fresh = launch(RunConfig(plan=two_stage_plan,
                             train=replace(train, cache_rows=5000, cache_staleness=0)))
    assert fresh.losses == plain.losses
    assert _pulled(fresh) == _pulled(plain)
    cached = launch(RunConfig(plan=two_stage_plan,
                              train=replace(train, cache_rows=5000, cache_staleness=3)))
    # Three rounds in four read the hot rows from the cache: well under the rows pulled.
    assert _pulled(cached) < 0.8 * _pulled(plain), (_pulled(cached), _pulled(plain))
    first, last = sum(cached.losses[:15]) / 15, sum(cached.losses[-15:]) / 15
    plain_drop = sum(plain.losses[:15]) / 15 - sum(plain.losses[-15:]) / 15
    assert first - last > 0.5 * plain_drop > 0


def test_the_cache_is_refused_where_rows_must_be_current(two_stage_plan, jobs) -> None:
    train = replace(jobs.settings(4), cache_rows=100, cache_staleness=2)  # bsp
    with pytest.raises(RunConfigError, match=r"cache_rows: needs an asynchronous sync mode"):
        Launcher(RunConfig(plan=two_stage_plan, train=train))
    with pytest.raises(RunConfigError, match=r"cache_staleness: must be 0 or more steps"):
        Launcher(RunConfig(plan=two_stage_plan, train=replace(train, sync="async",
                                                               cache_staleness=-1)))
