"""Budgets count work, never wall time: the one clock every solver's budget is checked on.

A budget in seconds (`--budget-s`, the web's budget per scheduler, an RL cap) is a budget of
CPU seconds of the thread that solves: a plan must not change because other processes held
the cores while it was being solved (issue 21). Budgets that can be counted in work units
(RL updates, search evaluations, generations) are counted in those instead.

Why the thread's CPU time (`time.thread_time`) and not the process's (`time.process_time`):
the web's embedded workers run several jobs as threads of one server process, so the
process's CPU time would charge a plan for a training run in a neighbouring thread, and the
answer would depend on that load again. On the command line the solving thread is the only
busy one, so both clocks agree there. The solvers run their work on the calling thread (numpy,
torch on one thread in the RL code); work a library hands to helper threads is not counted,
which can only make a budget last longer, never cut a solve short.

A `Deadline` must be checked on the thread that created it (the thread clock is per thread).
What it still does not make load-free: CPU time itself stretches a little under contention
(caches, shared cores), so a budget that binds within a few percent of what a solve needs can
still end differently; and HiGHS (the `exact` integer programme) only has a wall-clock time
limit, see `Deadline.wall_limit_s`.
"""

from __future__ import annotations

import math
import time


def cpu_s() -> float:
    """The calling thread's CPU clock, in seconds (only differences mean anything)."""
    return time.thread_time()


class Deadline:
    """`budget_s` CPU seconds of the calling thread, counted from its creation."""

    __slots__ = ("_cpu_start", "_wall_start", "budget_s")

    def __init__(self, budget_s: float) -> None:
        self.budget_s = float(budget_s)
        self._cpu_start = cpu_s()
        self._wall_start = time.perf_counter()

    @classmethod
    def after(cls, budget_s: float | None) -> Deadline | None:
        """A deadline `budget_s` CPU seconds from now; None for no budget (None or inf)."""
        if budget_s is None or not math.isfinite(budget_s):
            return None
        return cls(budget_s)

    def spent_s(self) -> float:
        """CPU seconds used since the deadline was set."""
        return cpu_s() - self._cpu_start

    def left_s(self) -> float:
        return self.budget_s - self.spent_s()

    def passed(self) -> bool:
        return self.spent_s() > self.budget_s

    def share(self) -> float:
        """The share of one core this thread has had since the deadline was set (1 on a
        quiet machine, about 1/3 next to two busy loops on one core)."""
        wall = time.perf_counter() - self._wall_start
        return 1.0 if wall <= 0.05 else min(1.0, max(0.05, self.spent_s() / wall))

    def wall_limit_s(self, floor_s: float = 0.1) -> float:
        """A wall-clock limit for a library that only has one (HiGHS): the CPU seconds left
        divided by the share of a core this thread has had so far, i.e. about the wall time
        the CPU left takes at the current load. An estimate: a load that changes during the
        library's call moves where it stops."""
        return max(floor_s, self.left_s() / self.share())


def budget_reached(budget_s: float | None) -> str:
    """How a plan's note says its budget ran out (the words users see, in one place)."""
    return f"the {budget_s:g} CPU-s budget was reached"


def passed(deadline: Deadline | None) -> bool:
    """True once `deadline` (None: no budget) has passed."""
    return deadline is not None and deadline.passed()


class Stopwatch:
    """Wall and CPU seconds of one piece of work (what a plan reports as its solve time)."""

    __slots__ = ("_cpu", "_wall")

    def __init__(self) -> None:
        self._cpu = cpu_s()
        self._wall = time.perf_counter()

    @property
    def wall_s(self) -> float:
        return time.perf_counter() - self._wall

    @property
    def cpu_s(self) -> float:
        return cpu_s() - self._cpu


class BudgetReached(Exception):
    """A search's deadline passed before it finished (it returns the best plan it has)."""
