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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heterps_core.schedulers.options_v2 import OptionTable


@dataclass(frozen=True)
class Multipliers:
    lam: np.ndarray  # (n_sets,) price of the time budget, $/h per (s/sample of cycle)
    mu: np.ndarray  # (n_sets, n_resources) price of one unit beyond a cap

    @property
    def n(self) -> int:
        return int(self.lam.size)


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
        self._index: dict[tuple[int, int, int], int] | None = None

    def priced(self, mult: Multipliers, full_time: bool = False) -> np.ndarray:
        """w per option and multiplier set; `full_time` charges lam a instead of lam a / M
        (valid for one option on its own: the cycle is at least a_s + the others' sum / M)."""
        t = self.table
        scale = 1.0 if full_time else 1.0 / self.micro
        w = (mult.lam * scale)[:, None] * self.turn_a[None, :]
        w += t.cost[None, :]
        if mult.mu.any():
            w += mult.mu[:, t.res] * t.units[None, :]
        return w

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
        for j in range(n):
            ends[:, j + 1, :] = np.min(head[:, : j + 1, :] + dense[:, : j + 1, j, :], axis=1)
            head[:, j + 1, :] = self._others(ends[:, j + 1, :])
        starts = np.full((sets, n + 1, n_res), np.inf)
        tail = np.full((sets, n + 1, n_res), np.inf)
        tail[:, n, :] = 0.0
        for i in range(n - 1, -1, -1):
            starts[:, i, :] = np.min(dense[:, i, i:, :] + tail[:, i + 1 :, :], axis=1)
            tail[:, i, :] = self._others(starts[:, i, :])
        value = ends[:, n, :].min(axis=1) - mult.lam * self.budget - mult.mu @ self.counts
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
        value = ends[:, n, :].min(axis=1) - mult.lam * self.budget - mult.mu @ self.counts
        return Tables(mult, head, tail, value, ends, dense)

    def _others(self, x: np.ndarray) -> np.ndarray:
        """min over q != r of x[..., q], for every r."""
        return np.min(x[..., None, :] + self._off, axis=-1)

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
        priced = self.priced(Multipliers(tabs.mult.lam[index : index + 1],
                                         tabs.mult.mu[index : index + 1]))[0]
        if self._index is None:
            self._index = self._stage_index()
        stage_of = self._index
        chosen: list[int] = []
        j, r = self.n - 1, int(np.argmin(ends[self.n]))
        while j >= 0:
            first = int(np.argmin(tabs.head[index, : j + 1, r] + dense[: j + 1, j, r]))
            c = stage_of[(first, j, r)]
            s = int(t.starts[c])
            e = int(t.starts[c + 1]) if c + 1 < t.starts.size else t.size
            chosen.append(s + int(np.argmin(priced[s:e])))
            if first > 0:
                prev = ends[first].copy()
                prev[r] = np.inf
                r = int(np.argmin(prev))
            j = first - 1
        chosen.reverse()
        return chosen

    def _stage_index(self) -> dict[tuple[int, int, int], int]:
        return {
            (f, la, r): c
            for c, (f, la, r) in enumerate(zip(
                self.stage_first.tolist(), self.stage_last.tolist(), self.stage_res.tolist(),
                strict=True,
            ))
        }
