"""`exact` under cost caps: the cheapest plan meeting the target that also meets the caps.

- `max_hourly_cost`: the objective is the hourly cost, so the uncapped optimum is the
  cheapest plan; if it costs more than the cap, no plan meets it (and the diagnostic says
  what the target needs).
- `max_total_cost`: total = cost_per_hour x samples / throughput / 3600, so a plan within
  it runs at least `cost_per_hour x samples / 3600 / max_total_cost`. When the optimum
  breaks the cap, every plan within it costs at least as much per hour, hence runs at least
  that fast: under the stagewise model (a plan runs at its slowest stage's rate) the stages
  slower than that are dropped and the DP runs again. Each round keeps every plan within
  the cap and drops the last answer, so the first answer within the cap is the optimum.
  Under the joint model (v2) a plan's rate is not its slowest stage's: the assignments are
  enumerated through the model up to ENUMERATE_LIMIT of them (exact), beyond which the
  answer says the cap could not be proven either way.
"""

from __future__ import annotations

from collections.abc import Callable

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.caps import CostCaps
from heterps_core.costmodels.common import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import ProgressCallback
from heterps_core.schedulers.brute import assignment_count, enumerate_plans
from heterps_core.schedulers.stagetable import StageTable

ENUMERATE_LIMIT = 50_000


def exact_within_caps(instance: Instance, caps: CostCaps, optimum: Plan,
                      solve: Callable[[StageTable], Plan],
                      progress: ProgressCallback | None = None) -> Plan:
    """`optimum`: the exact plan without caps; `solve(table)`: the exact optimum over the
    stages of `table` (stagewise models)."""
    if not optimum.feasible or caps.meets(optimum, instance):
        return optimum
    assert optimum.cost_per_hour is not None
    if not caps.allows(optimum.cost_per_hour, float("inf"), None):
        return infeasible_plan("exact", caps.hourly_reason(optimum.cost_per_hour))
    assert instance.samples is not None  # a total cap needs samples (CostCaps.check)
    if not cost_model_for(instance).stagewise:
        return _enumerated(instance, caps, optimum, progress)
    table, plan = StageTable(instance), optimum
    while True:
        assert plan.cost_per_hour is not None
        table = table.without_slower_than(caps.min_throughput(plan.cost_per_hour,
                                                              instance.samples))
        plan = solve(table)
        if not plan.feasible:
            return infeasible_plan("exact", caps.total_reason(optimum))
        assert plan.cost_per_hour is not None
        if not caps.allows(plan.cost_per_hour, float("inf"), None):
            return infeasible_plan("exact", (
                f"no plan: staying within --max-total-cost ${caps.max_total_cost:,.2f} needs "
                f"at least ${plan.cost_per_hour:,.3f}/h (--max-hourly-cost is "
                f"${caps.max_hourly_cost:,.3f}/h)"))
        if caps.meets(plan, instance):
            return plan


def _enumerated(instance: Instance, caps: CostCaps, optimum: Plan,
                progress: ProgressCallback | None) -> Plan:
    count = assignment_count(instance)
    if count > ENUMERATE_LIMIT:
        return infeasible_plan("exact", (
            f"{caps.total_reason(optimum)}; under cost model v2 a total cap is searched "
            f"exactly up to {ENUMERATE_LIMIT:,} assignments and this instance has {count:.3g}, "
            "so a dearer but faster plan within it was not ruled out"))
    return enumerate_plans(instance, caps, "exact", progress)
