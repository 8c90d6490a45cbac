"""`exact` under cost model v2: the label DP of `costmodel_v2`, pruned by certified bounds.

Per parameter-server placement (docs/schedulers.md, "The exact method under cost model v2"):

1. every option (stage x unit count) priced at once (`options_v2`);
2. Lagrangian bounds (`relax_v2`): a search over the time budget's multiplier, then
   subgradient steps that also price the caps; each bound's chain, its units re-chosen
   exactly for its assignment (`evaluate`'s DP), gives a plan that fits every cap: the upper
   bound U;
3. options whose bound exceeds U removed; the label DP keeps only labels whose exact cost so
   far plus the bound of the cheapest completion stays within U;
4. caps as in v1: relaxations that track more resources until the answer fits.

With a time budget the search stops at the deadline and returns the best plan found, with a
note giving its certified gap (never a plan called optimal that is not proven so).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from heterps_core.costmodel import REL_TOL, costs_equal
from heterps_core.costmodel_v2 import (
    LabelDP,
    Labels,
    Options,
    Solution,
    StageTerms,
    build_plan,
    greedy_units,
    infeasible_v2,
    server_choices,
    sync_label,
)
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.capacity_dp import BudgetReached
from heterps_core.schedulers.options_v2 import OptionTable, chain_table, option_table
from heterps_core.schedulers.relax_v2 import Multipliers, Relaxation, Tables

# How many distinct chains of the bounds get their units re-chosen exactly (upper bounds).
_ALLOCATIONS = 20
_SUBGRADIENT_STEPS = 30


def _limit(upper: float) -> float:
    # A plan tied with the best known one (costs equal within REL_TOL) must survive, and the
    # bounds are sums in another order than the plan's cost: a little slack on top.
    return upper * (1 + 2 * REL_TOL) + 1e-9


@dataclass
class Incumbent:
    """The best plan known that fits every cap (its stage cost and throughput)."""

    solution: Solution | None = None
    cost: float = math.inf

    def offer(self, solution: Solution | None) -> None:
        if solution is None:
            return
        if self.solution is None or _better(solution, self.solution):
            self.solution, self.cost = solution, solution.cost


def _better(a: Solution, b: Solution) -> bool:
    if not costs_equal(a.cost, b.cost):
        return a.cost < b.cost
    return a.throughput > b.throughput * (1 + REL_TOL)


@dataclass
class ChoiceSearch:
    """The stage problem for one parameter-server placement."""

    instance: Instance
    choice: object  # costmodel_v2._Choice
    table: OptionTable
    best: Incumbent = field(default_factory=Incumbent)
    lower: float = -math.inf
    proven: bool = False
    reason: str = ""
    # True: the table is one assignment's chain (evaluate, or re-choosing a bound's units);
    # its first upper bound is the greedy unit choice, and no chain is re-allocated
    fixed: bool = False

    def __post_init__(self) -> None:
        inst = self.instance
        names = inst.resource_names
        self.counts: dict[str, int] = self.choice.counts  # type: ignore[attr-defined]
        server = self.choice.server  # type: ignore[attr-defined]
        self.server_cost = server.cost_per_hour if server else 0.0
        self.rate = server.throughput if server else math.inf
        self.budget = (1 / inst.throughput_target) * (1 + REL_TOL)
        self.relax = Relaxation(
            self.table, len(inst.layers), len(names), inst.micro_batches, self.budget,
            np.array([self.counts[r] for r in names]),
        )
        self.sets: Tables | None = None
        self._tried: set[tuple[tuple[int, int], ...]] = set()

    # --- bounds -------------------------------------------------------------------------

    def bound(self, deadline: float | None) -> None:
        """Lower bound (Lagrangian) and upper bound (plans that fit every cap)."""
        none = f"no chain of stages meets the target ({sync_label(self.instance)})"
        if self.table.size == 0:
            self.lower, self.proven, self.reason = math.inf, True, none
            return
        r_res = self.relax.n_res
        zero = Multipliers(np.zeros(1), np.zeros((1, r_res)))
        base = self.relax.tables(zero)
        if not math.isfinite(float(base.value[0])):
            self.lower, self.proven, self.reason = math.inf, True, none
            return
        self.lower = float(base.value[0])
        if self.fixed:
            self._greedy()
            if self.best.solution is None and not self._fastest():
                self.lower, self.proven = math.inf, True  # no unit choice meets the budget
                return
        self._offer_chain(base, 0, deadline=deadline)
        scale = max(self.lower, 1e-9) / self.budget
        self._primal(scale, deadline)
        grid = np.concatenate([[0.0], scale * np.geomspace(1e-4, 1e3, 9)])
        best = self._grid(grid, deadline)
        for _ in range(2):
            if _out(deadline) or self.table.size == 0:
                return
            i = int(np.argmax(best.value))
            lo = best.mult.lam[max(i - 1, 0)]
            hi = best.mult.lam[min(i + 1, best.mult.n - 1)]
            lo = max(lo, hi * 1e-6)
            best = self._grid(np.geomspace(lo, hi, 10), deadline)
        if self.table.size == 0:
            return
        i = int(np.argmax(best.value))
        lam_star = float(best.mult.lam[i])
        keep = [lam_star, lam_star * 0.7, lam_star * 1.4]
        sets = Multipliers(np.array(keep), np.zeros((len(keep), r_res)))
        self.sets = self.relax.tables(sets)
        self._trim()
        if self._gap() > 1e-9 and not _out(deadline):
            self._subgradient(lam_star, deadline)
            self._trim()

    def _primal(self, scale: float, deadline: float | None) -> None:
        """M > 1: the relaxation charges lam a / M, blind to the longest stage, so its chains
        can all miss the budget. Chains priced at lam a instead (as if every stage's time
        added up: S <= b implies cycle <= b) are good plans for the upper bound; their values
        are not bounds and are used for nothing else."""
        micro = self.relax.micro
        if micro == 1:
            return
        lams = scale * np.geomspace(1e-3, 1e3, 10) * micro
        tabs = self.relax.tables(Multipliers(lams, np.zeros((lams.size, self.relax.n_res))))
        for i in range(lams.size):
            if np.isfinite(tabs.value[i]):
                self._offer_chain(tabs, i, deadline=deadline)

    def _grid(self, lams: np.ndarray, deadline: float | None) -> Tables:
        mult = Multipliers(lams, np.zeros((lams.size, self.relax.n_res)))
        tabs = self.relax.tables(mult)
        self.lower = max(self.lower, float(np.max(tabs.value)))
        order = np.argsort(-tabs.value)
        for i in order[:4]:
            if np.isfinite(tabs.value[i]):
                self._offer_chain(tabs, int(i), deadline=deadline)
        # every set's bound is valid: trim with the best few at once (the rest runs smaller)
        top = order[: min(3, order.size)]
        self.sets = Tables(
            Multipliers(tabs.mult.lam[top], tabs.mult.mu[top]), tabs.head[top], tabs.tail[top],
            tabs.value[top], tabs.ends[top], tabs.dense[top],
        )
        self._trim()
        return tabs

    def _subgradient(self, lam: float, deadline: float | None) -> None:
        """Projected subgradient on (lam, mu), in units where every constraint is relative
        (cycle / budget - 1, units / count - 1), Polyak steps towards the best plan known."""
        relax = self.relax
        counts = np.maximum(relax.counts, 1.0)
        x = np.concatenate([[lam * self.budget], np.zeros(relax.n_res)])
        theta, stall, best_value = 1.0, 0, self.lower
        best_x = x.copy()
        for _ in range(_SUBGRADIENT_STEPS):
            if _out(deadline) or self._gap() <= 1e-9 or relax.table.size == 0:
                break
            mult = Multipliers(np.array([x[0] / self.budget]), (x[1:] / counts)[None, :])
            tabs = relax.tables(mult)
            value = float(tabs.value[0])
            if not math.isfinite(value):
                break
            if value > best_value:
                best_value, best_x, stall = value, x.copy(), 0
            else:
                stall += 1
                if stall >= 4:
                    theta, stall = theta / 2, 0
            self.lower = max(self.lower, value)
            chosen = relax.plan(tabs, 0)
            self._offer_chain(tabs, 0, chosen, deadline)
            t = relax.table
            used_a = float(np.sum(relax.turn_a[chosen]))
            units = np.zeros(relax.n_res)
            np.add.at(units, t.res[chosen], t.units[chosen])
            grad = np.concatenate([
                [used_a / relax.micro / self.budget - 1], units / counts - 1
            ])
            norm = float(grad @ grad)
            if norm == 0:
                break
            target = self.best.cost if math.isfinite(self.best.cost) else 1.05 * abs(value) + 1
            step = theta * max(target - value, 1e-12 * abs(target)) / norm
            x = np.maximum(0.0, x + step * grad)
        if self.sets is not None:
            lam_b = np.append(self.sets.mult.lam, best_x[0] / self.budget)
            mu_b = np.vstack([self.sets.mult.mu, (best_x[1:] / counts)[None, :]])
            self.sets = relax.tables(Multipliers(lam_b, mu_b))

    def _offer_chain(
        self, tabs: Tables, index: int, chosen: list[int] | None = None,
        deadline: float | None = None,
    ) -> None:
        """A bound's chain as a plan: its own units if they fit the caps and the time budget,
        and (full search) its units re-chosen exactly for its assignment: upper bounds."""
        if chosen is None:
            chosen = self.relax.plan(tabs, index)
        self.best.offer(self._direct(chosen))
        if self.fixed or len(self._tried) >= _ALLOCATIONS:
            return
        t = self.table
        stages = tuple(sorted(set(t.cand[chosen].tolist())))
        key = tuple((int(t.first[t.starts[c]]), int(t.res[t.starts[c]])) for c in stages)
        if key in self._tried:
            return
        self._tried.add(key)
        sub = ChoiceSearch(
            self.instance, self.choice, t.select(np.isin(t.cand, stages)), fixed=True
        )
        try:
            sub.bound(deadline)
            # an upper bound only: without a plan of its own the sub-search's DP would have
            # no pruning, and proving a chain infeasible is not needed here
            if sub.best.solution is not None:
                sub.solve(deadline)
        except BudgetReached:
            pass
        self.best.offer(sub.best.solution)

    def _direct(self, chosen: list[int]) -> Solution | None:
        """The chain with exactly these options, if it fits the caps and the time budget."""
        t = self.table
        inst = self.instance
        names = inst.resource_names
        micro = inst.micro_batches
        turns = [float(t.per_sample[o]) for o in chosen if not t.ahead[o]]
        cycle = sum(turns) / micro + (1 - 1 / micro) * max(turns) if turns else 0.0
        if cycle > self.budget:
            return None
        used: dict[str, int] = {}
        for o in chosen:
            used[names[int(t.res[o])]] = used.get(names[int(t.res[o])], 0) + int(t.units[o])
        if any(u > self.counts[r] for r, u in used.items()):
            return None
        rate = min(
            [float(t.units[o] * inst.batch_size / t.time_s[o]) for o in chosen if t.ahead[o]]
            + [1 / cycle if cycle > 0 else math.inf, self.rate]
        )
        runs = [(int(t.first[o]), int(t.last[o]), names[int(t.res[o])], int(t.units[o]))
                for o in chosen]
        return Solution(runs, float(sum(float(t.cost[o]) for o in chosen)), rate)

    def _fastest(self) -> bool:
        """One assignment's chain: the unit choice with the least summed time per sample under
        the caps (a small exact DP over units per resource: stages on different resources
        share nothing else). It is a plan when it meets the time budget; False when even the
        least time cannot (a proof that the chain is infeasible)."""
        t = self.table
        names = self.instance.resource_names
        micro = self.instance.micro_batches
        ends = np.append(t.starts[1:], t.size)
        chosen: list[int] = []
        total = 0.0
        top = 0.0
        for r, name in enumerate(names):
            stages = [c for c in range(t.starts.size) if int(t.res[t.starts[c]]) == r]
            if not stages:
                continue
            count = self.counts[name]
            best = np.full(count + 1, np.inf)  # least summed time using exactly u units
            best[0] = 0.0
            picks = []
            for c in stages:
                s, e = int(t.starts[c]), int(ends[c])
                new = np.full(count + 1, np.inf)
                arg = np.full(count + 1, -1)
                for o in range(s, e):
                    k = int(t.units[o])
                    if k > count:
                        continue
                    trial = np.full(count + 1, np.inf)
                    trial[k:] = best[: count + 1 - k] + float(self.relax.turn_a[o])
                    better = trial < new
                    new[better], arg[better] = trial[better], o
                best = new
                picks.append(arg)
                top = max(top, float(np.min(self.relax.turn_a[s:e])))
            u = int(np.argmin(best))
            if not np.isfinite(best[u]):
                return False
            total += float(best[u])
            for arg in reversed(picks):
                o = int(arg[u])
                chosen.append(o)
                u -= int(t.units[o])
        # no unit choice has a smaller sum, nor a smaller longest stage than `top`
        if total / micro + (1 - 1 / micro) * top > self.budget:
            return False
        chosen.sort(key=lambda o: int(t.first[o]))
        self.best.offer(self._direct(chosen))
        return True

    def _greedy(self) -> None:
        """One assignment's chain: the greedy unit choice of `costmodel_v2.greedy_units`."""
        t = self.table
        stages = sorted(range(t.starts.size), key=lambda c: int(t.first[t.starts[c]]))
        ends = np.append(t.starts[1:], t.size)
        chain = [
            Options(
                int(t.first[s]), int(t.last[s]), self.instance.resource_names[int(t.res[s])],
                bool(t.ahead[s]), t.units[s:e], t.cost[s:e], t.time_s[s:e], t.per_sample[s:e],
            )
            for s, e in ((int(t.starts[c]), int(ends[c])) for c in stages)
        ]
        found = greedy_units(self.instance, chain, self.counts)
        if found is None:
            return
        chosen = [int(t.starts[c]) + i for c, i in zip(stages, found, strict=True)]
        self.best.offer(self._direct(chosen))

    def _trim(self) -> None:
        """Drop every option whose bound exceeds the best known plan's cost."""
        if self.sets is None or not math.isfinite(self.best.cost):
            return
        bounds = self.relax.option_bounds(self.sets).max(axis=0)
        keep = bounds <= _limit(self.best.cost)
        if keep.all():
            return
        self.table = self.table.select(keep)
        mult = self.sets.mult
        self.relax = Relaxation(
            self.table, self.relax.n, self.relax.n_res, self.relax.micro, self.budget,
            self.relax.counts,
        )
        if self.table.size == 0:
            return
        self.sets = self.relax.tables(mult)
        self.lower = max(self.lower, float(np.max(self.sets.value)))

    def _gap(self) -> float:
        if not math.isfinite(self.best.cost):
            return math.inf
        return (self.best.cost - self.lower) / max(self.best.cost, 1e-12)

    # --- the exact DP -------------------------------------------------------------------

    def solve(self, deadline: float | None) -> None:
        """The optimum over this placement (or BudgetReached with the bounds so far)."""
        if self.proven:
            return
        if self.table.size == 0:
            # every option is dearer than the incumbent: it is optimal
            self.proven = True
            return
        names = self.instance.resource_names
        candidates = self.table.candidates(names)
        upper = self.best.cost
        keep = self._label_bound() if math.isfinite(upper) else None
        capped: list[str] = []
        while True:
            solution = LabelDP(
                self.instance, candidates, capped, self.counts, self.rate, upper,
                bound=keep, deadline=deadline,
            ).solve()
            if solution is None:
                self.proven = True
                if self.best.solution is None:
                    what = "fits the availability caps" if capped else "meets the target"
                    self.reason = f"no chain of stages {what} ({sync_label(self.instance)})"
                return
            # each round solves a relaxation exactly: a lower bound
            self.lower = max(self.lower, solution.cost)
            over = _overrun(solution, self.counts)
            if not over:
                self.best.offer(solution)
                self.proven = True
                return
            capped = sorted(set(capped) | over)

    def _label_bound(self):  # type: ignore[no-untyped-def]
        assert self.sets is not None
        tabs = self.sets
        relax = self.relax
        micro = relax.micro
        names = self.instance.resource_names
        limit = _limit(self.best.cost)
        lam, mu = tabs.mult.lam, tabs.mult.mu
        offset = lam * self.budget + mu @ relax.counts

        def keep(lab: Labels, j: int, r: int, capped: list[str]) -> np.ndarray:
            time_used = lab.total / micro + (1 - 1 / micro) * lab.top
            value = lab.cost[None, :] + lam[:, None] * time_used[None, :]
            if capped:
                cols = [names.index(c) for c in capped]
                value = value + mu[:, cols] @ lab.usage.T
            value = value + tabs.tail[:, j + 1, r][:, None] - offset[:, None]
            return np.all(value <= limit, axis=0)

        return keep


def allocate(instance: Instance, choice: object, chain: list[Options]) -> Solution | None:
    """The cheapest unit counts for one chain of stages (caps and time budget respected),
    or None when none exists: `evaluate`'s v2 provisioning."""
    search = ChoiceSearch(
        instance, choice, chain_table(chain, instance.resource_names), fixed=True
    )
    search.bound(None)
    search.solve(None)
    return search.best.solution


def _out(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


def _overrun(solution: Solution, counts: dict[str, int]) -> set[str]:
    used: dict[str, int] = {}
    for _, _, res, units in solution.runs:
        used[res] = used.get(res, 0) + units
    return {r for r, u in used.items() if u > counts[r]}


def exact_v2(
    instance: Instance, budget_s: float | None = None, progress: ProgressCallback | None = None
) -> Plan:
    """The optimum of a version 2 instance (docs/schedulers.md), or with a budget that runs
    out, the best plan found with its certified gap."""
    report = progress or (lambda _: None)
    started = time.perf_counter()
    deadline = started + budget_s if budget_s is not None and math.isfinite(budget_s) else None
    choices, reasons = server_choices(instance)
    report(Progress(0, 4, "pricing every candidate stage"))
    full = option_table(StageTerms(instance))
    names = instance.resource_names
    searches = [ChoiceSearch(instance, c, full.within(c.counts, names)) for c in choices]
    report(Progress(1, 4, "Lagrangian bounds"))
    timed_out = False
    for search in searches:
        if _out(deadline):
            timed_out = True
            break
        search.bound(deadline)
    report(Progress(2, 4, "label DP over the kept options", _metrics(searches)))
    order = sorted(searches, key=lambda s: s.lower + s.server_cost)
    for search in order:
        if timed_out or _out(deadline):
            timed_out = True
            break
        best_total = min((s.best.cost + s.server_cost for s in searches), default=math.inf)
        if search.lower + search.server_cost > _limit(best_total):
            search.proven = True  # cannot beat a plan already known
            continue
        # the incumbent over every placement prunes this one too
        search.best.cost = min(search.best.cost, best_total - search.server_cost) \
            if search.best.solution is None else search.best.cost
        try:
            search.solve(deadline)
        except BudgetReached:
            timed_out = True
            break
    return _result(instance, searches, reasons, timed_out, budget_s, report)


def _metrics(searches: list[ChoiceSearch]) -> dict[str, float]:
    lower = min((s.lower + s.server_cost for s in searches), default=math.inf)
    upper = min((s.best.cost + s.server_cost for s in searches if s.best.solution),
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
        if _better(
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
        return build_plan(instance, best.best.solution.runs, best.choice.server,  # type: ignore[attr-defined]
                          "exact", best.counts)
    budget = f"the {budget_s:g} s time budget was reached"
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
    plan = build_plan(instance, best.best.solution.runs, best.choice.server,  # type: ignore[attr-defined]
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


