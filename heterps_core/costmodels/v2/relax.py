"""Lagrangian relaxation of the v2 stage problem: certified lower bounds that prune the exact
label DP (proof: docs/schedulers.md, "The exact method under cost model v2").

A plan P that fits the caps and the shared time budget has, for any `lam >= 0` and
`mu_r >= 0`,

    cost(P) >= cost(P) + lam (cycle(P) - b) + sum_r mu_r (units_r(P) - count_r)
            >= sum_s w_s - lam b - sum_r mu_r count_r,
    w_s = cost_s + lam a_s / M + mu_r k_s          (a_s = 0 for a stage that runs ahead)

because `cycle = sum a / M + (1 - 1/M) max a >= sum a / M`. The right side is minimised over
all chains by a plain DP over (prefix, last resource), caps and time budget ignored: a lower
bound for every multiplier. Forward (`head`) and backward (`tail`) tables of that DP bound
every option (prefix before it + the option + suffix after it) and every partial plan of the
label DP (its exact cost and time so far + the best suffix).

*Classes of the longest stage.* With M > 1 the term `(1 - 1/M) max a` is most of the cycle and
the bound above is blind to it. A set of multipliers may therefore also name a class
`floor < X <= tau` of the longest stage X = max a (the first class of a partition also holds
X = floor = 0): a plan of that class uses only options with `a <= tau` (the others are priced
inf) and has `sum a / M <= b - (1 - 1/M) floor`, so the same DP with that budget bounds every
plan of the class. The bound of a partition of [0, inf) into classes is the least over its
classes of each class's best bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heterps_core.costmodels.v2.table import OptionTable


@dataclass(frozen=True)
class Multipliers:
    lam: np.ndarray  # (n_sets,) price of the time budget, $/h per (s/sample of cycle)
    mu: np.ndarray  # (n_sets, n_resources) price of one unit beyond a cap
    # the class of the longest stage each set bounds: floor < X <= tau (None: 0 and inf)
    tau: np.ndarray | None = None
    floor: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.lam.size)

    @property
    def taus(self) -> np.ndarray:
        return np.full(self.n, np.inf) if self.tau is None else self.tau

    @property
    def floors(self) -> np.ndarray:
        return np.zeros(self.n) if self.floor is None else self.floor

    def take(self, index: np.ndarray | slice) -> Multipliers:
        """The sets at `index` (with their classes)."""
        return Multipliers(
            self.lam[index], self.mu[index],
            None if self.tau is None else self.tau[index],
            None if self.floor is None else self.floor[index],
        )


def concat(parts: list[Multipliers]) -> Multipliers:
    """The sets of every part, in order."""
    return Multipliers(
        np.concatenate([p.lam for p in parts]), np.vstack([p.mu for p in parts]),
        np.concatenate([p.taus for p in parts]), np.concatenate([p.floors for p in parts]),
    )


@dataclass(frozen=True)
class Tables:
    """For each multiplier set: head[l, i, r] = cheapest priced cover of layers 0..i-1 whose
    last stage is not on r (0 for i = 0); tail[l, j, r] = of layers j..n-1 whose first stage
    is not on r (0 for j = n); value[l] = the Lagrangian bound."""

    mult: Multipliers
    head: np.ndarray
    tail: np.ndarray
    value: np.ndarray
    ends: np.ndarray  # ends[l, i, r]: cheapest priced cover of 0..i-1 ending on r
    dense: np.ndarray  # dense[l, i, j, r]: cheapest priced option of stage i..j on r

    def take(self, index: np.ndarray) -> Tables:
        """The tables of the sets at `index`."""
        return Tables(
            self.mult.take(index), self.head[index], self.tail[index], self.value[index],
            self.ends[index], self.dense[index],
        )


class Relaxation:
    def __init__(
        self, table: OptionTable, n_layers: int, n_res: int, micro: int, budget: float,
        counts: np.ndarray,
    ) -> None:
        self.table = table
        self.n, self.n_res, self.micro, self.budget = n_layers, n_res, micro, budget
        self.counts = counts.astype(np.float64)
        self.turn_a = np.where(table.ahead, 0.0, table.per_sample)
        s = table.starts
        self.stage_first, self.stage_last, self.stage_res = (
            table.first[s], table.last[s], table.res[s]
        )
        off = np.zeros((n_res, n_res))
        np.fill_diagonal(off, np.inf)
        self._off = off
        self._index: np.ndarray | None = None

    def priced(self, mult: Multipliers, full_time: bool = False) -> np.ndarray:
        """w per option and multiplier set (inf outside the set's class); `full_time` also
        charges lam (1 - 1/M) max(a, floor), valid for one option on its own: the longest
        stage of a plan using it is at least a and above the class's floor."""
        t = self.table
        w = (mult.lam / self.micro)[:, None] * self.turn_a[None, :]
        if full_time:
            longest = np.maximum(self.turn_a[None, :], mult.floors[:, None])
            w += (mult.lam * (1 - 1 / self.micro))[:, None] * longest
        w += t.cost[None, :]
        if mult.mu.any():
            w += mult.mu[:, t.res] * t.units[None, :]
        if mult.tau is not None:
            w[self.turn_a[None, :] > mult.tau[:, None]] = np.inf
        return w

    def budgets(self, mult: Multipliers) -> np.ndarray:
        """Per set, the budget of sum a / M in its class: b - (1 - 1/M) floor."""
        return self.budget - (1 - 1 / self.micro) * mult.floors

    def tables(self, mult: Multipliers) -> Tables:
        n, n_res = self.n, self.n_res
        sets = mult.n
        weights = np.minimum.reduceat(self.priced(mult), self.table.starts, axis=1)
        dense = np.full((sets, n, n, n_res), np.inf)
        dense[:, self.stage_first, self.stage_last, self.stage_res] = weights
        if self.stage_first.size <= 4 * n:
            return self._sparse_tables(mult, weights, dense)
        ends = np.full((sets, n + 1, n_res), np.inf)  # cover of 0..i-1 ending on r
        head = np.full((sets, n + 1, n_res), np.inf)
        head[:, 0, :] = 0.0
        least = np.minimum.reduce  # the ufunc itself: these loops make many small calls
        off = self._off
        for j in range(n):
            ends[:, j + 1, :] = least(head[:, : j + 1, :] + dense[:, : j + 1, j, :], axis=1)
            head[:, j + 1, :] = least(ends[:, j + 1, None, :] + off, axis=-1)
        starts = np.full((sets, n + 1, n_res), np.inf)
        tail = np.full((sets, n + 1, n_res), np.inf)
        tail[:, n, :] = 0.0
        for i in range(n - 1, -1, -1):
            starts[:, i, :] = least(dense[:, i, i:, :] + tail[:, i + 1 :, :], axis=1)
            tail[:, i, :] = least(starts[:, i, None, :] + off, axis=-1)
        value = ends[:, n, :].min(axis=1) - mult.lam * self.budgets(mult) - mult.mu @ self.counts
        return Tables(mult, head, tail, value, ends, dense)

    def _sparse_tables(self, mult: Multipliers, weights: np.ndarray, dense: np.ndarray) -> Tables:
        """The same tables, one step per stage instead of per layer (few stages left)."""
        n, n_res, sets = self.n, self.n_res, mult.n
        first, last, res = (
            self.stage_first.tolist(), self.stage_last.tolist(), self.stage_res.tolist()
        )
        ends = np.full((sets, n + 1, n_res), np.inf)
        head = np.full((sets, n + 1, n_res), np.inf)
        head[:, 0, :] = 0.0
        ready = {0}
        # by last layer: when a stage starting at f is reached, every stage ending at f - 1
        # has been, so head[f] is final
        for c in sorted(range(len(first)), key=lambda c: last[c]):
            f, la, r = first[c], last[c], res[c]
            if f not in ready:
                head[:, f, :] = self._others(ends[:, f, :])
                ready.add(f)
            ends[:, la + 1, r] = np.minimum(ends[:, la + 1, r], head[:, f, r] + weights[:, c])
        head[:, 1:, :] = self._others(ends[:, 1:, :])
        starts = np.full((sets, n + 1, n_res), np.inf)
        tail = np.full((sets, n + 1, n_res), np.inf)
        tail[:, n, :] = 0.0
        ready = {n}
        for c in sorted(range(len(first)), key=lambda c: -first[c]):
            f, la, r = first[c], last[c], res[c]
            if la + 1 not in ready:
                tail[:, la + 1, :] = self._others(starts[:, la + 1, :])
                ready.add(la + 1)
            starts[:, f, r] = np.minimum(starts[:, f, r], weights[:, c] + tail[:, la + 1, r])
        tail[:, :n, :] = self._others(starts[:, :n, :])
        value = ends[:, n, :].min(axis=1) - mult.lam * self.budgets(mult) - mult.mu @ self.counts
        return Tables(mult, head, tail, value, ends, dense)

    def _others(self, x: np.ndarray) -> np.ndarray:
        """min over q != r of x[..., q], for every r."""
        return np.minimum.reduce(x[..., None, :] + self._off, axis=-1)

    def option_bounds(self, tabs: Tables) -> np.ndarray:
        """Lower bound on the cost of any plan that uses each option, per multiplier set."""
        t = self.table
        mult = tabs.mult
        w = self.priced(mult, full_time=True)
        # the prefix and suffix parts depend on the stage only
        around = (
            tabs.head[:, self.stage_first, self.stage_res]
            + tabs.tail[:, self.stage_last + 1, self.stage_res]
            - (mult.lam * self.budget)[:, None]
            - (mult.mu @ self.counts)[:, None]
        )
        w += around[:, t.cand]
        return w

    def plan(self, tabs: Tables, index: int) -> list[int]:
        """The options (indices into the table) of a chain attaining set `index`'s bound."""
        t = self.table
        ends, dense = tabs.ends[index], tabs.dense[index]
        if self._index is None:
            self._index = self._stage_index()
        stages: list[int] = []
        j, r = self.n - 1, int(np.argmin(ends[self.n]))
        while j >= 0:
            first = int(np.argmin(tabs.head[index, : j + 1, r] + dense[: j + 1, j, r]))
            stages.append(int(self._index[first, j, r]))
            if first > 0:
                prev = ends[first].copy()
                prev[r] = np.inf
                r = int(np.argmin(prev))
            j = first - 1
        stages.reverse()
        # each stage's cheapest priced option: `priced` on the chain's options only (the
        # same operations, so the same values)
        mult = tabs.mult.take(slice(index, index + 1))
        lam, mu = float(mult.lam[0]), mult.mu[0]
        tau = float(mult.taus[0])
        chosen: list[int] = []
        for c in stages:
            s = int(t.starts[c])
            e = int(t.starts[c + 1]) if c + 1 < t.starts.size else t.size
            w = (lam / self.micro) * self.turn_a[s:e]
            w = w + t.cost[s:e]
            if mult.mu.any():
                w = w + mu[t.res[s:e]] * t.units[s:e]
            if mult.tau is not None:
                w = np.where(self.turn_a[s:e] > tau, np.inf, w)
            chosen.append(s + int(np.argmin(w)))
        return chosen

    def _stage_index(self) -> np.ndarray:
        """index[first, last, r]: the stage's number in the table."""
        index = np.full((self.n, self.n, self.n_res), -1, dtype=np.int64)
        index[self.stage_first, self.stage_last, self.stage_res] = np.arange(
            self.stage_first.size
        )
        return index


def grouped(mult: Multipliers) -> tuple[np.ndarray, np.ndarray]:
    """An order of the sets that makes each class's sets contiguous, and where each class
    starts in that order (for `partition_bound`)."""
    keys = np.column_stack([mult.floors, mult.taus])
    order = np.lexsort(keys.T[::-1])
    keys = keys[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(keys[1:] != keys[:-1], axis=1)
    return order, np.flatnonzero(new)


def join(a: Tables, b: Tables) -> Tables:
    """The sets of both."""
    return Tables(
        concat([a.mult, b.mult]), np.concatenate([a.head, b.head]),
        np.concatenate([a.tail, b.tail]), np.concatenate([a.value, b.value]),
        np.concatenate([a.ends, b.ends]), np.concatenate([a.dense, b.dense]),
    )


def partition_bound(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per item, the bound of the partition: the least over classes of the class's best
    (largest) bound. `values` is (sets x items) with the sets grouped as `grouped` leaves
    them."""
    return np.maximum.reduceat(values, starts, axis=0).min(axis=0)
