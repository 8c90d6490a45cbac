"""The one budget clock (heterps_core/budget.py): CPU seconds of the solving thread, so
waiting, sleeping and other threads' work never spend a budget."""

from __future__ import annotations

import math
import threading
import time

from heterps_core.budget import Deadline, Stopwatch, budget_reached, passed


def _burn(seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def test_no_budget_is_no_deadline() -> None:
    assert Deadline.after(None) is None and Deadline.after(math.inf) is None
    assert not passed(None)


def test_waiting_does_not_spend_a_budget_and_working_does() -> None:
    deadline = Deadline(0.1)
    time.sleep(0.25)  # wall time passes, the thread does no work
    assert not deadline.passed() and deadline.left_s() > 0.05
    _burn(0.15)
    assert deadline.passed() and passed(deadline)


def test_another_threads_work_is_not_counted() -> None:
    # the web runs jobs as threads of one process: a neighbour's CPU is not this plan's
    deadline = Deadline(0.1)
    neighbour = threading.Thread(target=_burn, args=(0.3,))
    neighbour.start()
    neighbour.join()
    assert not deadline.passed()


def test_wall_limit_for_highs_is_the_cpu_left_at_the_current_share() -> None:
    deadline = Deadline(5.0)
    _burn(0.1)
    assert 4.0 < deadline.wall_limit_s() <= 5.0 / deadline.share() + 1e-9
    time.sleep(0.2)  # the thread got a smaller share of a core: more wall time per CPU-s
    assert deadline.share() < 0.9 and deadline.wall_limit_s() > deadline.left_s()
    assert Deadline(0.0).wall_limit_s() == 0.1  # never below the floor


def test_stopwatch_and_the_note() -> None:
    watch = Stopwatch()
    time.sleep(0.1)
    assert watch.wall_s >= 0.1 and watch.cpu_s < 0.05
    assert budget_reached(2) == "the 2 CPU-s budget was reached"
