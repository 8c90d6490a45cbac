"""The scheduler interface: one small class per scheduler, one registry (see `registry.py`)."""

from __future__ import annotations

from typing import ClassVar

from heterps_core.budget import Stopwatch
from heterps_core.costmodels.caps import NO_CAPS, CostCaps
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import ProgressCallback, no_progress


class Scheduler:
    """Assigns every layer of an instance to a resource and returns the spec's plan.

    Subclasses implement `solve`; `plan` times it and stamps the scheduler's name, so every
    plan carries an honest `solve_time_s` (wall seconds, what the user waited; the CPU
    seconds of the same solve are in `last_cpu_s`). `budget_s` is a budget of the solving
    thread's CPU seconds (heterps_core/budget.py), never of wall time.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    stochastic: ClassVar[bool] = False
    honours_caps: ClassVar[bool] = False  # searches only plans within `caps` (exact, brute)

    def __init__(self, seed: int = 0, budget_s: float | None = None, **options: object) -> None:
        self.seed = seed
        self.budget_s = budget_s
        caps = options.pop("caps", None)
        self.caps = caps if isinstance(caps, CostCaps) else NO_CAPS
        self.options = options
        self.last_cpu_s: float | None = None  # CPU seconds of the last `plan`

    @classmethod
    def refusal(cls, instance: Instance) -> str | None:
        """Why this scheduler will not run on `instance` (e.g. too large), or None if it will."""
        return None

    def plan(self, instance: Instance, progress: ProgressCallback = no_progress) -> Plan:
        watch = Stopwatch()
        self.caps.check(instance)
        plan = self.solve(instance, progress)
        if not self.honours_caps and plan.feasible and not self.caps.meets(plan, instance):
            plan = Plan(scheduler=self.name, feasible=False, assignment=plan.assignment,
                        reason=f"no plan: the plan {self.name} found breaks the caps "
                               f"({self.caps.breach(plan)}); the exact scheduler finds "
                               "the cheapest plan within them, or what the target needs")
        self.last_cpu_s = watch.cpu_s
        return plan.with_scheduler(self.name, watch.wall_s)

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        raise NotImplementedError
