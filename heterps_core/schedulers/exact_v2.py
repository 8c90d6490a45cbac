"""`exact` under cost model v2: the label DP of `costmodels/v2`, pruned by certified bounds.

Per parameter-server placement (docs/schedulers.md, "The exact method under cost model v2"):

1. every option (stage x unit count) priced at once (`costmodels.v2.table`), the row wait of the
   placement's shards included;
2. Lagrangian bounds (`costmodels.v2.relax`): a search over the time budget's multiplier, then
   subgradient steps that also price the caps; each bound's chain, its units re-chosen
   exactly for its assignment (`evaluate`'s DP), gives a plan that fits every cap: the upper
   bound U;
3. options whose bound exceeds U removed; the label DP keeps only labels whose exact cost so
   far plus the bound of the cheapest completion stays within U;
4. caps as in v1: relaxations that track more resources until the answer fits;
5. M > 1: when the label DP outgrows a budget of labels, it is abandoned and the bounds are
   taken again per class of the longest stage (each class with its own multipliers), which
   see the `(1 - 1/M) max a` term of the cycle that step 2's bound leaves out.

With a budget (CPU seconds, heterps_core/budget.py) the search stops when it is spent and
returns the best plan found, with a note giving its certified gap (never a plan called optimal
that is not proven so).
"""

from __future__ import annotations

import math

import numpy as np

from heterps_core.budget import BudgetReached, Deadline, budget_reached, passed
from heterps_core.costmodels.common import REL_TOL
from heterps_core.costmodels.v2.chain_search import ChainSearch
from heterps_core.costmodels.v2.incumbent import better_solution, cost_limit
from heterps_core.costmodels.v2.label_search import Abandoned
from heterps_core.costmodels.v2.labels import Solution
from heterps_core.costmodels.v2.plans import build_plan, infeasible_v2
from heterps_core.costmodels.v2.relax import Tables
from heterps_core.costmodels.v2.server import server_choices, server_row_wait_s
from heterps_core.costmodels.v2.table import OptionTable, option_table
from heterps_core.costmodels.v2.terms import StageTerms
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.stage_classes import CLASS_STEPS, ClassSearch

# How many distinct chains of the bounds get their units re-chosen exactly (upper bounds).
_ALLOCATIONS = 20
# Work the first label DP (and a chain's re-chosen units) may do before it is abandoned:
# labels looked at, plus `label_search.CALL_WEIGHT` per batch of them. On the 64 x 6 grid
# the instances the DP solved in under 0.2 s looked at up to about 40,000 labels, those it
# took 0.2-1.4 s on 100,000-600,000.
_TRIAL_LABELS = 20_000


class ChoiceSearch(ClassSearch):
    """The stage problem for one parameter-server placement: bounds (`costmodels.v2.bounds`),
    the label DP (`label_search`) and, when that outgrows its trial budget, the classes of
    the longest stage (`stage_classes`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._tried: set[tuple[tuple[int, int], ...]] = set()

    def solve(self, deadline: Deadline | None) -> None:
        """The optimum over this placement (or BudgetReached with the bounds so far).

        The label DP first runs on the bounds of `bound` with a budget of labels; most
        instances finish within it. One that outgrows it (caps and several micro-batches,
        where the bound is blind to the longest stage) is abandoned, bounded again by class
        of the longest stage, and solved with those bounds: the same optimum either way,
        the budget only decides which bounds prune."""
        if self.proven:
            return
        capped: list[str] = []
        if self._splittable():
            try:
                self._rounds(capped, deadline, _TRIAL_LABELS)
                return
            except Abandoned:
                pass
            if self._classes(deadline) and self._open(deadline):
                self._subgradient(deadline, CLASS_STEPS)
                self._trim()
        self._rounds(capped, deadline, None)

    def _splittable(self) -> bool:
        return (self.relax.micro > 1 and self.sets is not None
                and self.table.size > 0 and math.isfinite(self.best.cost))

    def _offer_chain(
        self, tabs: Tables, index: int, chosen: list[int] | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        """A bound's chain as a plan: its own units if they fit the caps and the time budget,
        and its units re-chosen exactly for its assignment: upper bounds."""
        if chosen is None:
            chosen = self.relax.plan(tabs, index)
        self.best.offer(self._direct(chosen))
        if len(self._tried) >= _ALLOCATIONS:
            return
        t = self.table
        stages = tuple(sorted(set(t.cand[chosen].tolist())))
        key = tuple((int(t.first[t.starts[c]]), int(t.res[t.starts[c]])) for c in stages)
        if key in self._tried:
            return
        self._tried.add(key)
        sub = ChainSearch(self.instance, self.choice, t.select(np.isin(t.cand, stages)))
        try:
            sub.bound(deadline)
            # an upper bound only: without a plan of its own the sub-search's DP would have
            # no pruning, and proving a chain infeasible is not needed here; nor is the
            # chain's own optimum when its DP grows large (many stages on one capped type)
            if sub.best.solution is not None and not sub.proven:
                sub._rounds([], deadline, _TRIAL_LABELS)
        except (BudgetReached, Abandoned):
            pass
        self.best.offer(sub.best.solution)


def _out(deadline: Deadline | None) -> bool:
    return passed(deadline)




def exact_v2(
    instance: Instance, budget_s: float | None = None, progress: ProgressCallback | None = None
) -> Plan:
    """The optimum of a version 2 instance (docs/schedulers.md), or with a budget that runs
    out, the best plan found with its certified gap."""
    report = progress or (lambda _: None)
    deadline = Deadline.after(budget_s)
    choices, reasons = server_choices(instance)
    report(Progress(0, 4, "pricing every candidate stage"))
    names = instance.resource_names
    # a stage's row wait depends on where the shards are (row_s of the host over the
    # shards): one table per distinct wait, each placement's counts taken from it
    tables: dict[float, OptionTable] = {}
    searches = []
    for c in choices:
        wait = server_row_wait_s(instance, c.server)
        if wait not in tables:
            tables[wait] = option_table(StageTerms(instance, server=c.server))
        searches.append(ChoiceSearch(instance, c, tables[wait].within(c.counts, names)))
    # The placements one after the other, cheapest first by the cost-only bound: the best
    # plan of those done bounds the next from the start (a plan there dearer than it cannot
    # win; ties survive the limit's slack), so its bounds trim more and it is often ruled out
    # before its label DP.
    for search in searches:
        search.start()
    order = sorted(searches, key=lambda s: s.lower + s.server_cost)
    timed_out = False
    for i, search in enumerate(order):
        if _out(deadline):
            timed_out = True
            break
        best_total = min((s.best.cost + s.server_cost for s in searches), default=math.inf)
        if search.lower + search.server_cost > cost_limit(best_total):
            search.proven = True  # cannot beat a plan already known
            continue
        search.best.ceiling = best_total - search.server_cost
        report(Progress(1, 4, _placement("Lagrangian bounds", i, len(order))))
        search.bound(deadline)
        if _out(deadline):
            timed_out = True
            break
        best_total = min((s.best.cost + s.server_cost for s in searches), default=math.inf)
        if search.lower + search.server_cost > cost_limit(best_total):
            search.proven = True
            continue
        search.best.ceiling = best_total - search.server_cost
        report(Progress(2, 4, _placement("label DP over the kept options", i, len(order)),
                        _metrics(searches)))
        try:
            search.solve(deadline)
        except BudgetReached:
            timed_out = True
            break
    return _result(instance, searches, reasons, timed_out, budget_s, report)


def _placement(what: str, i: int, n: int) -> str:
    return what if n == 1 else f"{what} (server placement {i + 1} of {n})"


def _metrics(searches: list[ChoiceSearch]) -> dict[str, float]:
    lower = min((s.lower + s.server_cost for s in searches), default=math.inf)
    upper = min((s.best.solution.cost + s.server_cost for s in searches if s.best.solution),
                default=math.inf)
    out = {"lower_bound_per_hour": lower}
    if math.isfinite(upper):
        out["best_per_hour"] = upper
        out["gap"] = (upper - lower) / upper
    return out


def _result(
    instance: Instance, searches: list[ChoiceSearch], reasons: list[str], timed_out: bool,
    budget_s: float | None, report: ProgressCallback,
) -> Plan:
    found = [s for s in searches if s.best.solution is not None]
    best: ChoiceSearch | None = None
    for s in found:
        assert s.best.solution is not None
        if best is None:
            best = s
            continue
        assert best.best.solution is not None
        a, b = s.best.solution, best.best.solution
        if better_solution(
            Solution(a.runs, a.cost + s.server_cost, a.throughput),
            Solution(b.runs, b.cost + best.server_cost, b.throughput),
        ):
            best = s
    if not timed_out:
        if best is None:
            why = [s.reason for s in searches if s.reason] + reasons
            return infeasible_v2(
                instance, "exact", "; ".join(dict.fromkeys(why)) or "no plan", None
            )
        report(Progress(4, 4, "optimal"))
        assert best.best.solution is not None
        return build_plan(instance, best.best.solution.runs, best.choice.server,
                          "exact", best.counts)
    budget = budget_reached(budget_s)
    lower = min(
        (s.best.cost if s.proven else s.lower) + s.server_cost for s in searches
    ) if searches else math.inf
    if best is None:
        return infeasible_v2(
            instance, "exact",
            f"{budget} before any plan fitting the availability caps was found "
            "(not proven infeasible); raise --budget-s",
            None,
        )
    assert best.best.solution is not None
    plan = build_plan(instance, best.best.solution.runs, best.choice.server,
                      "exact", best.counts)
    cost = plan.cost_per_hour or 0.0
    if cost <= lower * (1 + REL_TOL):
        note = (f"{budget}: the cost ${cost:,.3f}/h is optimal, but a plan of the same cost "
                "with a higher throughput was not ruled out")
    else:
        gap = (cost - lower) / cost
        note = (f"not proven optimal, gap {100 * gap:.2f}%: {budget}; this plan costs "
                f"${cost:,.3f}/h and no plan that fits the caps costs less than "
                f"${lower:,.3f}/h")
    return plan.with_notes(note)
