"""A tie between schedulers' plans goes to `exact` (a proven optimum), whatever order the
schedulers were listed in (issue 25.11: `bayes`, listed first, won ties)."""

from __future__ import annotations

from dataclasses import replace

from heterps_core.plan import Plan
from webapp.jobs import samples
from webapp.planning.services import chosen_scheduler


def _plan(scheduler: str, cost_scale: float = 1.0) -> Plan:
    plan = Plan.from_dict(samples.ctr_plan())
    return replace(plan, scheduler=scheduler,
                   cost_per_hour=(plan.cost_per_hour or 0.0) * cost_scale)


def test_a_tie_goes_to_exact_whichever_comes_first() -> None:
    assert chosen_scheduler({"bayes": _plan("bayes"), "exact": _plan("exact")}) == "exact"
    assert chosen_scheduler({"exact": _plan("exact"), "bayes": _plan("bayes")}) == "exact"
    assert chosen_scheduler({"bayes": _plan("bayes"), "genetic": _plan("genetic")}) == "bayes"


def test_a_cheaper_plan_still_wins() -> None:
    assert chosen_scheduler({"exact": _plan("exact"), "bayes": _plan("bayes", 0.5)}) == "bayes"
    assert chosen_scheduler({"bayes": None, "exact": _plan("exact")}) == "exact"
