"""Bounds on one server placement's stage problem (docs/schedulers.md, "The exact method
under cost model v2", steps 1-3): a first cost-only bound, Lagrangian bounds over the time
budget's multiplier and the caps' prices (`relax`), and the options they rule out; every
bound's chain offered as a plan (upper bounds). `label_search` adds the label DP on top,
the exact search (schedulers/exact_v2.py) the classes of the longest stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.common import REL_TOL
from heterps_core.costmodels.v2.incumbent import Incumbent, cost_limit
from heterps_core.costmodels.v2.labels import Solution
from heterps_core.costmodels.v2.relax import (
    Multipliers,
    Relaxation,
    Tables,
    concat,
    grouped,
    partition_bound,
)
from heterps_core.costmodels.v2.server import Choice
from heterps_core.costmodels.v2.table import OptionTable
from heterps_core.costmodels.v2.terms import sync_label
from heterps_core.instance import Instance

_SUBGRADIENT_STEPS = 30


@dataclass
class Bounds:
    """The stage problem for one parameter-server placement: its options and its bounds."""

    instance: Instance
    choice: Choice
    table: OptionTable
    best: Incumbent = field(default_factory=Incumbent)
    lower: float = -math.inf
    proven: bool = False
    reason: str = ""

    def __post_init__(self) -> None:
        inst = self.instance
        names = inst.resource_names
        self.counts: dict[str, int] = self.choice.counts
        server = self.choice.server
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
        if not self._seed():
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

    def _seed(self) -> bool:
        """First plans before any bound (False: proof that none exists); none by default."""
        return True

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
        limit = cost_limit(self.best.cost) if math.isfinite(self.best.cost) else math.inf
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
            limit = cost_limit(self.best.cost) if math.isfinite(self.best.cost) else math.inf
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
        """A bound's chain as a plan (an upper bound): its own units, if they fit the caps and
        the time budget."""
        if chosen is None:
            chosen = self.relax.plan(tabs, index)
        self.best.offer(self._direct(chosen))

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

    def _trim(self) -> None:
        """Drop every option whose bound exceeds the best known plan's cost (in every live
        class of the longest stage that could hold it)."""
        if self.sets is None or not math.isfinite(self.best.cost):
            return
        self._drop_dead()
        if self.sets is None:
            return
        bounds = partition_bound(self.relax.option_bounds(self.sets), self.starts)
        keep = bounds <= cost_limit(self.best.cost)
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


def _out(deadline: Deadline | None) -> bool:
    return passed(deadline)
