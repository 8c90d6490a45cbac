"""Bounds by class of the longest stage (M > 1; docs/schedulers.md, step 5 of "The exact
method under cost model v2").

The Lagrangian bound charges `lam a / M` per stage and does not see the `(1 - 1/M) max a`
term of the cycle. Split the range of the longest stage X into classes `floor < X <= tau`:
a plan of a class uses only options with `a <= tau` and has `sum a / M <= b - (1 - 1/M)
floor`, so each class gets a bound of its own (`relax`), with its own multipliers; the
classes the best plan known cannot rule out are split once more.
"""

from __future__ import annotations

import math

import numpy as np

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.v2.incumbent import cost_limit
from heterps_core.costmodels.v2.label_search import LabelSearch
from heterps_core.costmodels.v2.relax import Multipliers, Tables, join

# The first partition's upper edges as fractions of the largest a; how many times the classes
# the incumbent leaves open are split; at most how many classes; at most how many multiplier
# sets per table pass of the class search; multipliers per class (a coarse grid, then a fine
# one around its best point); subgradient steps per class.
_CLASS_EDGES = (1 / 64, 1 / 16, 1 / 4, 1 / 2, 3 / 4, 1.0)
_CLASS_SPLITS = 1
_MAX_CLASSES = 24
_CLASS_SETS = 96
_CLASS_GRID = (10, 8)
CLASS_STEPS = 15


class ClassSearch(LabelSearch):
    """The label search with, on request, bounds per class of the longest stage."""

    def _classes(self, deadline: Deadline | None) -> bool:
        """M > 1: bound per class of the longest stage X (`costmodels.v2.relax`): a
        partition of [0, a_max], each class with its own multiplier search, the classes the
        incumbent cannot rule out split again (their bound is the loosest where they are
        wide). False: not used (one micro-batch, or no stage taking turns)."""
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
                tabs.value <= cost_limit(self.best.cost) if math.isfinite(self.best.cost)
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


def _out(deadline: Deadline | None) -> bool:
    return passed(deadline)
