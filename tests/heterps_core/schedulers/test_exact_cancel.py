"""`exact` stops mid-solve when its progress callback raises (issue 12, item 4).

The web's callback raises WorkCancelled once a user pressed Cancel; these tests play that
callback: a flag is set while the solver is inside one of its loops, the next report
raises, and the solver must stop there instead of finishing the solve first (before the
hook, the uncapped DP and the capped searches reported only at their start and end).
"""

from __future__ import annotations

import pytest

from heterps_core.frontier import frontier
from heterps_core.generate import stress_instance
from heterps_core.progress import Progress
from heterps_core.schedulers.exact import exact_plan


class Cancelled(Exception):
    """Stands for WorkCancelled (heterps_core knows nothing of Django)."""


class CancelAfter:
    """Sets the cancel flag at the first report whose message contains `phase`; the next
    report (any message) raises, as a cancelled job's callback does."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.flag = False
        self.seen: list[Progress] = []
        self.raised_at: Progress | None = None

    def __call__(self, progress: Progress) -> None:
        self.seen.append(progress)
        if self.flag:
            self.raised_at = progress
            raise Cancelled
        if self.phase in progress.message:
            self.flag = True


def test_uncapped_dp_stops_at_the_next_layer_block() -> None:
    inst = stress_instance(0, 512, 16, caps=False)
    cancel = CancelAfter("dynamic programme over (prefix, last resource)")
    with pytest.raises(Cancelled):
        exact_plan(inst, progress=cancel)
    # It raised inside the DP (a report of the same phase), not once the plan was done.
    assert cancel.raised_at is not None
    assert "dynamic programme over (prefix, last resource)" in cancel.raised_at.message
    assert all(p.message != "optimal" for p in cancel.seen)


def test_capped_searches_stop_mid_dp() -> None:
    inst = stress_instance(0, 256, 16, caps=True)
    for phase in ("searching the most promising stages", "tracking units of"):
        cancel = CancelAfter(phase)
        with pytest.raises(Cancelled):
            exact_plan(inst, progress=cancel)
        assert cancel.raised_at is not None and phase in cancel.raised_at.message
        assert all(p.message != "optimal" for p in cancel.seen)


def test_frontier_stops_inside_its_first_target() -> None:
    inst = stress_instance(0, 256, 16, caps=False)
    cancel = CancelAfter("dynamic programme")
    with pytest.raises(Cancelled):
        frontier(inst, [100.0, 200.0, 400.0], progress=cancel)
    assert cancel.raised_at is not None
    assert cancel.raised_at.message.startswith("target 100 samples/s: dynamic programme")
    assert cancel.raised_at.current < 1000  # the first of three targets was not finished


def test_a_solve_that_is_not_cancelled_is_unchanged() -> None:
    inst = stress_instance(0, 256, 16, caps=True)
    seen: list[Progress] = []
    with_reports = exact_plan(inst, progress=seen.append)
    without = exact_plan(inst)
    assert with_reports.to_dict() | {"solve_time_s": 0} == without.to_dict() | {"solve_time_s": 0}
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
