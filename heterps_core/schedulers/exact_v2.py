"""`exact` under cost model v2: the label DP of `costmodel_v2`, pruned by certified bounds.

Per parameter-server placement (docs/schedulers.md, "The exact method under cost model v2"):

1. every option (stage x unit count) priced at once (`options_v2`), the row wait of the
   placement's shards included;
2. Lagrangian bounds (`relax_v2`): a search over the time budget's multiplier, then
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
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from heterps_core.budget import Deadline, budget_reached, passed
from heterps_core.costmodel import REL_TOL, costs_equal
from heterps_core.costmodel_v2 import (
    LabelBound,
    LabelDP,
    Labels,
    Options,
    Solution,
    StageTerms,
    build_plan,
    greedy_units,
    infeasible_v2,
    server_choices,
    server_row_wait_s,
    sync_label,
)
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.capacity_dp import BudgetReached
from heterps_core.schedulers.options_v2 import OptionTable, chain_table, option_table
from heterps_core.schedulers.relax_v2 import (
    Multipliers,
    Relaxation,
    Tables,
    concat,
    grouped,
    join,
    partition_bound,
)

# How many distinct chains of the bounds get their units re-chosen exactly (upper bounds).
_ALLOCATIONS = 20
_SUBGRADIENT_STEPS = 30
# Classes of the longest stage (M > 1): the first partition's upper edges as fractions of the
# largest a; how many times the classes the incumbent leaves open are split; at most how many
# classes; at most how many multiplier sets per table pass of the class search; multipliers
# per class (a coarse grid, then a fine one around its best point); subgradient steps.
_CLASS_EDGES = (1 / 64, 1 / 16, 1 / 4, 1 / 2, 3 / 4, 1.0)
_CLASS_SPLITS = 1
_MAX_CLASSES = 24
_CLASS_SETS = 96
_CLASS_GRID = (10, 8)
_CLASS_STEPS = 15
# Work the first label DP (and a chain's re-chosen units) may do before it is abandoned:
# labels looked at, plus _CALL_WEIGHT per batch of them (a batch costs about that many
# labels' time). On the 64 x 6 grid the instances the DP solved in under 0.2 s looked at
# up to about 40,000 labels, those it took 0.2-1.4 s on 100,000-600,000.
_TRIAL_LABELS = 20_000
_CALL_WEIGHT = 20


def _limit(upper: float) -> float:
    # A plan tied with the best known one (costs equal within REL_TOL) must survive, and the
    # bounds are sums in another order than the plan's cost: a little slack on top.
    return upper * (1 + 2 * REL_TOL) + 1e-9


@dataclass
class Incumbent:
    """The best plan known that fits every cap (its stage cost and throughput). `cost` prunes:
    the least of its cost and `ceiling`, what a plan must not exceed to matter at all (the
    best plan of another server placement, less this one's server cost)."""

    solution: Solution | None = None
    _ceiling: float = math.inf
    _own: float = math.inf

    @property
    def cost(self) -> float:
        return min(self._own, self._ceiling)

    @property
    def ceiling(self) -> float:
        return self._ceiling

    @ceiling.setter
    def ceiling(self, value: float) -> None:
        self._ceiling = min(self._ceiling, value)

    def offer(self, solution: Solution | None) -> None:
        if solution is None:
            return
        if self.solution is None or _better(solution, self.solution):
            self.solution, self._own = solution, solution.cost


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
        # The multiplier sets that prune, grouped by class of the longest stage (relax_v2):
        # `starts` where each class's sets begin, `class_lb` each class's best bound so far.
        # Only live classes (bound within the incumbent's limit) are kept; `dead_lb` is the
        # least bound of those dropped (no plan of theirs can beat the incumbent).
        self.sets: Tables | None = None
        self.starts = np.zeros(1, dtype=np.int64)
        self.class_lb = np.full(1, -np.inf)
        self.dead_lb = math.inf
        self.mu0 = np.zeros(len(names))
        self._base: Tables | None = None
        self._tried: set[tuple[tuple[int, int], ...]] = set()

    # --- bounds -------------------------------------------------------------------------

    def start(self) -> None:
        """The cost-only bound (no multipliers): a first lower bound, or the proof that no
        chain of stages exists at all."""
        none = f"no chain of stages meets the target ({sync_label(self.instance)})"
        if self.table.size == 0:
            self.lower, self.proven, self.reason = math.inf, True, none
            return
        zero = Multipliers(np.zeros(1), np.zeros((1, self.relax.n_res)))
        self._base = self.relax.tables(zero)
        if not math.isfinite(float(self._base.value[0])):
            self.lower, self.proven, self.reason = math.inf, True, none
            return
        self.lower = max(self.lower, float(self._base.value[0]))

    def bound(self, deadline: Deadline | None) -> None:
        """Lower bound (Lagrangian) and upper bound (plans that fit every cap)."""
        if self._base is None and not self.proven:
            self.start()
        if self.proven or self._base is None:
            return
        r_res = self.relax.n_res
        base = self._base
        if self.fixed:
            self._greedy()
            if self.best.solution is None and not self._fastest():
                self.lower, self.proven = math.inf, True  # no unit choice meets the budget
                return
        self._offer_chain(base, 0, deadline=deadline)
        # the cost-only bound already rules out most options of a large table: the passes
        # below then price fewer
        self._use(base)
        self._trim()
        if self.table.size == 0:
            return
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
        self._use(self.relax.tables(sets))
        self._trim()
        if self._open(deadline):
            self._subgradient(deadline, _SUBGRADIENT_STEPS)
            self._trim()

    def _open(self, deadline: Deadline | None) -> bool:
        """Whether the bounds still leave a gap that more bounding might close."""
        return (self._gap() > 1e-9 and not _out(deadline) and self.sets is not None
                and self.table.size > 0)

    def _primal(self, scale: float, deadline: Deadline | None) -> None:
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

    def _grid(self, lams: np.ndarray, deadline: Deadline | None) -> Tables:
        mult = Multipliers(lams, np.zeros((lams.size, self.relax.n_res)))
        tabs = self.relax.tables(mult)
        self.lower = max(self.lower, float(np.max(tabs.value)))
        order = np.argsort(-tabs.value)
        for i in order[:4]:
            if np.isfinite(tabs.value[i]):
                self._offer_chain(tabs, int(i), deadline=deadline)
        # every set's bound is valid: trim with the best few at once (the rest runs smaller)
        top = order[: min(3, order.size)]
        self._use(tabs.take(top))
        self._trim()
        return tabs

    # --- classes of the longest stage (M > 1) --------------------------------------------

    def _use(self, tabs: Tables, fresh: bool = True) -> None:
        """Prune with these sets from now on (one partition of the longest stage's range;
        not `fresh`: more sets for the classes already in use)."""
        order, starts = grouped(tabs.mult)
        self.sets = tabs.take(order)
        self.starts = starts
        class_lb = np.maximum.reduceat(self.sets.value, starts)
        if not fresh and class_lb.size == self.class_lb.size:
            class_lb = np.maximum(class_lb, self.class_lb)
        else:
            self.dead_lb = math.inf
        self.class_lb = class_lb
        self._update_lower()
        self._drop_dead()

    def _update_lower(self) -> None:
        live = float(self.class_lb.min()) if self.class_lb.size else math.inf
        self.lower = max(self.lower, min(live, self.dead_lb))

    def _drop_dead(self) -> None:
        """Forget the classes whose bound exceeds the incumbent: an optimum is in a live one
        (the label DP and the option bounds then need the live classes only)."""
        if self.sets is None:
            return
        # a class with no bound holds no plan at all (not even with no incumbent)
        limit = _limit(self.best.cost) if math.isfinite(self.best.cost) else math.inf
        live = (self.class_lb <= limit) & np.isfinite(self.class_lb)
        if live.all():
            return
        self.dead_lb = min(self.dead_lb, float(self.class_lb[~live].min()))
        sizes = np.diff(np.append(self.starts, self.sets.mult.n))
        keep = np.repeat(live, sizes)
        if not keep.any():
            # no class can beat the incumbent: it is optimal (or, with none, nothing is
            # feasible), and no option is needed any more
            self.sets = None
            self.starts, self.class_lb = np.zeros(0, dtype=np.int64), np.zeros(0)
            self._update_lower()
            self.table = self.table.select(np.zeros(self.table.size, dtype=bool))
            self.relax = Relaxation(
                self.table, self.relax.n, self.relax.n_res, self.relax.micro, self.budget,
                self.relax.counts,
            )
            if self.best.solution is None:
                self.reason = f"no chain of stages meets the target ({sync_label(self.instance)})"
            return
        self.sets = self.sets.take(np.flatnonzero(keep))
        self.starts = np.concatenate([[0], np.cumsum(sizes[live])[:-1]]).astype(np.int64)
        self.class_lb = self.class_lb[live]
        self._update_lower()

    def _classes(self, deadline: Deadline | None) -> bool:
        """M > 1: bound per class of the longest stage X (relax_v2): a partition of [0, a_max],
        each class with its own multiplier search, the classes the incumbent cannot rule out
        split again (their bound is the loosest where they are wide). False: not used (one
        micro-batch, or no stage taking turns)."""
        relax = self.relax
        if relax.micro == 1 or self.table.size == 0:
            return False
        a_max = float(relax.turn_a.max())
        if a_max <= 0:
            return False
        edges = a_max * np.array(_CLASS_EDGES)
        floors = np.concatenate([[0.0], edges[:-1]])
        # the caps' prices start where the search over the whole range left them
        assert self.sets is not None
        self.mu0 = self.sets.mult.mu[int(np.argmax(self.sets.value))]
        tabs = self._class_search(floors, edges, deadline)
        for _ in range(_CLASS_SPLITS):
            if _out(deadline) or tabs.mult.n >= _MAX_CLASSES:
                break
            live = np.flatnonzero(
                tabs.value <= _limit(self.best.cost) if math.isfinite(self.best.cost)
                else np.isfinite(tabs.value)
            )
            if live.size == 0 or live.size + tabs.mult.n > _MAX_CLASSES:
                break
            f, t = tabs.mult.floors[live], tabs.mult.taus[live]
            mid = np.where(f > 0, (f + t) / 2, t / 4)
            split = self._class_search(
                np.concatenate([f, mid]), np.concatenate([mid, t]), deadline
            )
            rest = np.setdiff1d(np.arange(tabs.mult.n), live)
            tabs = join(tabs.take(rest), split)
        self._use(tabs)
        self._trim()
        return True

    def _class_search(
        self, floors: np.ndarray, taus: np.ndarray, deadline: Deadline | None
    ) -> Tables:
        """Each class's best lam (a geometric grid, refined once around its best point); the
        tables of that set per class, its chain offered as a plan."""
        relax = self.relax
        k = floors.size
        mu = np.tile(self.mu0, (k, 1))
        zero = Multipliers(np.zeros(k), mu, taus, floors)
        budgets = relax.budgets(zero)
        v0 = relax.tables(zero).value
        ok = np.isfinite(v0) & (budgets > 0)
        scale = np.where(ok, np.maximum(np.abs(v0), 1e-9) / np.where(ok, budgets, 1.0), 0.0)
        coarse = np.geomspace(1e-3, 1e3, _CLASS_GRID[0])
        lams = np.column_stack([np.zeros(k), scale[:, None] * coarse])
        values = self._class_values(lams, taus, floors)
        i = np.argmax(values, axis=1)
        rows = np.arange(k)
        lo = lams[rows, np.maximum(i - 1, 0)]
        hi = lams[rows, np.minimum(i + 1, lams.shape[1] - 1)]
        lo = np.maximum(lo, hi * 1e-6)
        fine = np.geomspace(
            np.maximum(lo, 1e-300), np.maximum(hi, 1e-300), _CLASS_GRID[1], axis=1
        )
        fine = np.where(ok[:, None], fine, 0.0)
        lams = np.hstack([lams, fine])
        values = np.hstack([values, self._class_values(fine, taus, floors)])
        best = lams[rows, np.argmax(values, axis=1)]
        # a class with no chain, or whose budget is spent by its floor, holds no plan
        tabs = relax.tables(Multipliers(best, mu, taus, floors))
        value = np.where(ok, np.maximum(tabs.value, values.max(axis=1)), np.inf)
        tabs = Tables(tabs.mult, tabs.head, tabs.tail, value, tabs.ends, tabs.dense)
        for c in np.argsort(value):
            if np.isfinite(value[c]) and not _out(deadline):
                self._offer_chain(tabs, int(c), deadline=deadline)
        return tabs

    def _class_values(self, lams: np.ndarray, taus: np.ndarray, floors: np.ndarray) -> np.ndarray:
        k, g = lams.shape
        out = np.empty((k, g))
        rows = max(1, _CLASS_SETS // g)
        for c in range(0, k, rows):
            part = slice(c, c + rows)
            n = lams[part].size
            mult = Multipliers(
                lams[part].reshape(-1), np.tile(self.mu0, (n, 1)),
                np.repeat(taus[part], g), np.repeat(floors[part], g),
            )
            out[part] = self.relax.tables(mult).value.reshape(-1, g)
        return out

    def _subgradient(self, deadline: Deadline | None, steps: int) -> None:
        """Projected subgradient on (lam, mu), one run per live class side by side, in units
        where every constraint is relative (sum a / M over the class's budget - 1, units /
        count - 1), Polyak steps towards the best plan known."""
        assert self.sets is not None
        relax = self.relax
        counts = np.maximum(relax.counts, 1.0)
        # each class's best set so far is where its run starts
        sizes = np.diff(np.append(self.starts, self.sets.mult.n))
        cls = np.repeat(np.arange(self.starts.size), sizes)
        first_best = np.array([
            int(self.starts[c] + np.argmax(self.sets.value[cls == c]))
            for c in range(self.starts.size)
        ])
        base = self.sets.mult.take(first_best)
        budgets = relax.budgets(base)
        k = base.n
        x = np.column_stack([base.lam * budgets, base.mu * counts])
        theta, stall = np.ones(k), np.zeros(k, dtype=np.int64)
        best_value, best_x = self.class_lb.copy(), x.copy()
        for _ in range(steps):
            if _out(deadline) or self._gap() <= 1e-9 or relax.table.size == 0:
                break
            mult = Multipliers(x[:, 0] / budgets, x[:, 1:] / counts, base.tau, base.floor)
            tabs = relax.tables(mult)
            value = tabs.value
            better = value > best_value
            best_value = np.where(better, value, best_value)
            best_x[better] = x[better]
            stall = np.where(better, 0, stall + 1)
            theta = np.where(stall >= 4, theta / 2, theta)
            stall[stall >= 4] = 0
            self.class_lb = np.maximum(self.class_lb, value)
            self._update_lower()
            limit = _limit(self.best.cost) if math.isfinite(self.best.cost) else math.inf
            moving = np.isfinite(value) & (self.class_lb <= limit)
            if not moving.any():
                break
            target = self.best.cost if math.isfinite(self.best.cost) else math.nan
            step_x = np.zeros_like(x)
            t = relax.table
            for c in np.flatnonzero(moving):
                chosen = relax.plan(tabs, int(c))
                self._offer_chain(tabs, int(c), chosen, deadline)
                used_a = float(np.sum(relax.turn_a[chosen]))
                units = np.zeros(relax.n_res)
                np.add.at(units, t.res[chosen], t.units[chosen])
                grad = np.concatenate([[used_a / relax.micro / budgets[c] - 1], units / counts - 1])
                norm = float(grad @ grad)
                if norm == 0:
                    continue
                goal = target if math.isfinite(target) else 1.05 * abs(value[c]) + 1
                step = theta[c] * max(goal - value[c], 1e-12 * abs(goal)) / norm
                step_x[c] = step * grad
            x = np.maximum(0.0, x + step_x)
        mult = Multipliers(best_x[:, 0] / budgets, best_x[:, 1:] / counts, base.tau, base.floor)
        # the same classes in the same order: what they proved stays proved
        self._use(relax.tables(concat([self.sets.mult, mult])), fresh=False)

    def _offer_chain(
        self, tabs: Tables, index: int, chosen: list[int] | None = None,
        deadline: Deadline | None = None,
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
            # no pruning, and proving a chain infeasible is not needed here; nor is the
            # chain's own optimum when its DP grows large (many stages on one capped type)
            if sub.best.solution is not None and not sub.proven:
                sub._rounds([], deadline, _TRIAL_LABELS)
        except (BudgetReached, _Abandoned):
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
        """Drop every option whose bound exceeds the best known plan's cost (in every live
        class of the longest stage that could hold it)."""
        if self.sets is None or not math.isfinite(self.best.cost):
            return
        self._drop_dead()
        if self.sets is None:
            return
        bounds = partition_bound(self.relax.option_bounds(self.sets), self.starts)
        keep = bounds <= _limit(self.best.cost)
        if keep.all():
            return
        self.table = self.table.select(keep)
        self.relax = Relaxation(
            self.table, self.relax.n, self.relax.n_res, self.relax.micro, self.budget,
            self.relax.counts,
        )
        if self.table.size == 0:
            return
        # fewer options: every set's bound can only rise
        self.sets = self.relax.tables(self.sets.mult)
        self.class_lb = np.maximum(
            self.class_lb, np.maximum.reduceat(self.sets.value, self.starts)
        )
        self._update_lower()

    def _gap(self) -> float:
        if not math.isfinite(self.best.cost):
            return math.inf
        return (self.best.cost - self.lower) / max(self.best.cost, 1e-12)

    # --- the exact DP -------------------------------------------------------------------

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
            except _Abandoned:
                pass
            if self._classes(deadline) and self._open(deadline):
                self._subgradient(deadline, _CLASS_STEPS)
                self._trim()
        self._rounds(capped, deadline, None)

    def _splittable(self) -> bool:
        return (not self.fixed and self.relax.micro > 1 and self.sets is not None
                and self.table.size > 0 and math.isfinite(self.best.cost))

    def _rounds(self, capped: list[str], deadline: Deadline | None, labels: int | None) -> None:
        """The label DP, caps tracked round by round (`capped` grows in place: a later call
        starts from the caps found so far, a valid start as any). `labels`: abandon
        (_Abandoned) once the pruning test has seen that many labels."""
        if self.table.size == 0:
            # every option is dearer than the incumbent: it is optimal
            self.proven = True
            return
        names = self.instance.resource_names
        candidates = self.table.candidates(names)
        upper = self.best.cost
        keep = self._label_bound() if math.isfinite(upper) else None
        if keep is not None and labels is not None:
            keep = _budgeted(keep, labels)
        while True:
            solution = LabelDP(
                self.instance, candidates, capped, self.counts, self.rate, upper,
                bound=_timed(keep, deadline),
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
            capped[:] = sorted(set(capped) | over)

    def _label_bound(self):  # type: ignore[no-untyped-def]
        self._drop_dead()
        if self.sets is None:
            return lambda lab, j, r, capped: np.zeros(lab.size, dtype=bool)
        tabs = self.sets
        starts = self.starts
        relax = self.relax
        micro = relax.micro
        names = self.instance.resource_names
        limit = _limit(self.best.cost)
        lam, mu = tabs.mult.lam, tabs.mult.mu
        floor = tabs.mult.floors[:, None]
        tau = None if tabs.mult.tau is None else tabs.mult.tau[:, None]
        offset = lam * self.budget + mu @ relax.counts

        def keep(lab: Labels, j: int, r: int, capped: list[str]) -> np.ndarray:
            # a completion in class (floor, tau] has its longest stage >= max(X, floor)
            longest = np.maximum(lab.top[None, :], floor)
            time_used = lab.total[None, :] / micro + (1 - 1 / micro) * longest
            value = lab.cost[None, :] + lam[:, None] * time_used
            if capped:
                cols = [names.index(c) for c in capped]
                value = value + mu[:, cols] @ lab.usage.T
            value = value + tabs.tail[:, j + 1, r][:, None] - offset[:, None]
            if tau is not None:
                value[lab.top[None, :] > tau] = np.inf  # not a prefix of that class's plans
            return partition_bound(value, starts) <= limit

        return keep


class _Abandoned(Exception):
    """The trial label DP saw more labels than its budget."""


def _budgeted(keep: LabelBound, labels: int) -> LabelBound:
    """`keep`, raising _Abandoned once it has been asked about `labels` labels in all."""
    seen = [0]

    def counted(lab: Labels, j: int, r: int, capped: Sequence[str]) -> np.ndarray:
        seen[0] += lab.size + _CALL_WEIGHT
        if seen[0] > labels:
            raise _Abandoned
        return keep(lab, j, r, capped)

    return counted


def allocate(instance: Instance, choice: object, chain: list[Options]) -> Solution | None:
    """The cheapest unit counts for one chain of stages (caps and time budget respected),
    or None when none exists: `evaluate`'s v2 provisioning."""
    search = ChoiceSearch(
        instance, choice, chain_table(chain, instance.resource_names), fixed=True
    )
    search.bound(None)
    search.solve(None)
    return search.best.solution


def _out(deadline: Deadline | None) -> bool:
    return passed(deadline)


def _timed(keep: LabelBound | None, deadline: Deadline | None) -> LabelBound | None:
    """`keep` (None: keep every label), raising BudgetReached once `deadline` passes. The
    label DP checks its own deadline on the wall clock; it gets none, and the budget (CPU
    seconds, budget.py) is checked here instead, each time it prunes a block of labels."""
    if deadline is None:
        return keep

    def timed(lab: Labels, j: int, r: int, capped: Sequence[str]) -> np.ndarray:
        if deadline.passed():
            raise BudgetReached
        if keep is None:
            return np.ones(lab.size, dtype=bool)
        return keep(lab, j, r, capped)

    return timed


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
        if search.lower + search.server_cost > _limit(best_total):
            search.proven = True  # cannot beat a plan already known
            continue
        search.best.ceiling = best_total - search.server_cost
        report(Progress(1, 4, _placement("Lagrangian bounds", i, len(order))))
        search.bound(deadline)
        if _out(deadline):
            timed_out = True
            break
        best_total = min((s.best.cost + s.server_cost for s in searches), default=math.inf)
        if search.lower + search.server_cost > _limit(best_total):
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


