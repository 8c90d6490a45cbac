"""The cost model, for callers that price one assignment: `evaluate(instance, assignment)` is
the model of the instance (`costmodels.cost_model_for`) on that assignment.

The models, their interface and the spec's arithmetic live in `heterps_core/costmodels/`
(docs/cost-model.md); this module keeps the names every scheduler, report and test uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.chain import ChainCosts, Provision, StageShape
from heterps_core.costmodels.common import (
    REL_TOL,
    check_assignment,
    costs_equal,
    infeasible_plan,
    is_better,
    stages_of,
)
from heterps_core.costmodels.v1 import feasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan

__all__ = [
    "REL_TOL", "ChainCosts", "Provision", "StageShape", "check_assignment", "costs_equal",
    "evaluate", "feasible_plan", "infeasible_plan", "is_better", "stages_of",
]


def evaluate(
    instance: Instance,
    assignment: Sequence[str],
    scheduler: str = "evaluate",
    costs: ChainCosts | None = None,
) -> Plan:
    """The cost model on one assignment: a feasible plan, or an infeasible one with its reason.
    `costs`: the instance's prefix sums, when the caller has them already."""
    return cost_model_for(instance, costs).evaluate(assignment, scheduler)
