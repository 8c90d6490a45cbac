"""Cost caps on a planning request (`heterps plan --max-hourly-cost X --max-total-cost Y`).

Not instance fields: the same instance can be planned under different budgets. A plan meets
the caps when its `cost_per_hour` is at most `max_hourly_cost` and its `total_cost` (which
needs the instance's `samples`) at most `max_total_cost`, both within the objective's
relative tolerance. With caps the objective is unchanged (the cheapest plan per hour that
meets the target, then the fastest) over the plans that meet them.
"""

from __future__ import annotations

from dataclasses import dataclass

from heterps_core.costmodels.common import REL_TOL
from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan


@dataclass(frozen=True)
class CostCaps:
    max_hourly_cost: float | None = None
    max_total_cost: float | None = None

    @property
    def any(self) -> bool:
        return self.max_hourly_cost is not None or self.max_total_cost is not None

    def check(self, instance: Instance) -> None:
        """A total cap needs a job length: the instance's `samples`."""
        if self.max_total_cost is not None and instance.samples is None:
            raise InstanceError("--max-total-cost", "needs the instance's `samples` (the job's "
                                "length); the instance gives none")

    def allows(self, cost_per_hour: float, throughput: float, samples: float | None) -> bool:
        if self.max_hourly_cost is not None and \
                cost_per_hour > self.max_hourly_cost * (1 + REL_TOL):
            return False
        if self.max_total_cost is not None and samples is not None:
            return self.total(cost_per_hour, throughput, samples) <= \
                self.max_total_cost * (1 + REL_TOL)
        return True

    def meets(self, plan: Plan, instance: Instance) -> bool:
        if not plan.feasible or not self.any:
            return plan.feasible
        assert plan.cost_per_hour is not None and plan.throughput is not None
        return self.allows(plan.cost_per_hour, plan.throughput, instance.samples)

    @staticmethod
    def total(cost_per_hour: float, throughput: float, samples: float) -> float:
        return cost_per_hour * samples / throughput / 3600

    def min_throughput(self, cost_per_hour: float, samples: float) -> float:
        """The throughput a plan costing at least `cost_per_hour` needs to stay within the
        total cap (every plan meeting it is at least this fast)."""
        assert self.max_total_cost is not None
        return cost_per_hour * samples / 3600 / (self.max_total_cost * (1 + REL_TOL))

    # The reasons name the caps in words, not by the CLI's flags: the web form shows them too.
    def hourly_reason(self, cheapest: float) -> str:
        return (f"no plan: the target needs at least ${cheapest:,.3f}/h "
                f"(the hourly cap is ${self.max_hourly_cost:,.3f}/h)")

    def total_reason(self, cheapest: Plan) -> str:
        assert cheapest.cost_per_hour is not None and cheapest.total_cost is not None
        return (f"no plan: no plan meeting the target stays within the total cap of "
                f"${self.max_total_cost:,.2f} (the cheapest per hour, at "
                f"${cheapest.cost_per_hour:,.3f}/h, costs ${cheapest.total_cost:,.2f} in total)")

    def breach(self, plan: Plan) -> str:
        """Which cap a feasible plan breaks, with its figure."""
        assert plan.cost_per_hour is not None
        if self.max_hourly_cost is not None and \
                plan.cost_per_hour > self.max_hourly_cost * (1 + REL_TOL):
            return (f"${plan.cost_per_hour:,.3f}/h is over the hourly cap of "
                    f"${self.max_hourly_cost:,.3f}/h")
        return f"${plan.total_cost or 0:,.2f} in total is over the total cap of " \
               f"${self.max_total_cost or 0:,.2f}"

    def reason(self, plan: Plan, instance: Instance) -> str:
        """Why the cheapest plan meeting the target (`plan`) breaks the caps."""
        assert plan.cost_per_hour is not None
        if self.max_hourly_cost is not None and \
                plan.cost_per_hour > self.max_hourly_cost * (1 + REL_TOL):
            return self.hourly_reason(plan.cost_per_hour)
        return self.total_reason(plan)


NO_CAPS = CostCaps()
