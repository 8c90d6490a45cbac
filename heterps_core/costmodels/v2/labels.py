"""The label DP: the cheapest chain of candidate stages with their unit counts, exactly.

Units are no longer a per-stage choice in v2: the stages that take turns share one time
budget, so a plan's units are picked together (cheapest first, the objective's tie-break on
throughput). The same DP provisions a given assignment (`evaluate`) and searches all of them
(`exact`): labels (cost, sum a, max a, min ahead rate, units on capped resources) are kept per
state when no other label is at least as good in every field, which is the exchange argument
of docs/schedulers.md with a vector-valued state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from heterps_core.costmodels.base import Options
from heterps_core.costmodels.common import REL_TOL, costs_equal
from heterps_core.instance import Instance

# keep(labels, last layer j, resource index r of state (j, r), tracked resources) -> bool mask:
# False only for labels that provably cannot complete into a plan no dearer than the best known
LabelBound = Callable[["Labels", int, int, Sequence[str]], np.ndarray]


@dataclass
class Labels:
    """Partial plans ending at one state; parallel arrays, one entry per label."""

    cost: np.ndarray
    total: np.ndarray  # sum of a_s over stages taking turns
    top: np.ndarray  # max of a_s over them
    ahead: np.ndarray  # min throughput of ahead stages (inf: none)
    usage: np.ndarray  # units per capped resource, shape (n, n_capped)
    parent: np.ndarray  # shape (n, 4): first layer, option index, source resource, source label

    @property
    def size(self) -> int:
        return int(self.cost.size)


def _root(n_capped: int) -> Labels:
    return Labels(
        np.zeros(1), np.zeros(1), np.zeros(1), np.full(1, np.inf),
        np.zeros((1, n_capped), dtype=np.int64), np.full((1, 4), -1, dtype=np.int64),
    )


def turns_rate(total: np.ndarray, top: np.ndarray, micro: int) -> np.ndarray:
    """Samples/s of the stages taking turns with M micro-batches (inf when there are none)."""
    cycle = total / micro + (1 - 1 / micro) * top
    with np.errstate(divide="ignore"):
        return np.where(cycle > 0, 1 / np.where(cycle > 0, cycle, 1), np.inf)


def _pareto(lab: Labels, micro: int = 2) -> Labels:
    """Drop every label some other label matches or beats in every field.

    After a lexicographic sort a label can only be matched or beaten by an earlier one
    (anything <= it in every field sorts before it), so one pass over blocks suffices.
    """
    n = lab.size
    if n <= 1:
        return lab
    # With one micro-batch the longest stage does not enter the cycle: not a field then.
    tops = [lab.top] if micro > 1 else []
    fields = np.column_stack([lab.cost, lab.total, *tops, -lab.ahead, lab.usage])
    varying = [c for c in range(fields.shape[1]) if not np.all(fields[:, c] == fields[0, c])]
    fields = fields[:, varying] if varying else fields[:, :1]
    order = np.lexsort(fields.T[::-1])
    fields = fields[order]
    dominated = np.zeros(n, dtype=bool)
    if fields.shape[1] <= 2:
        # cost sorted (ties by the second field): beaten iff the second field is not lower
        # than the lowest one seen before
        second = fields[:, -1]
        best_before = np.minimum.accumulate(np.concatenate([[np.inf], second[:-1]]))
        dominated = second >= best_before
    else:
        # Compare each block with the labels kept so far and with the earlier rows of the block:
        # a row beaten by a dropped label is beaten by a kept one too (dominance is transitive).
        kept = fields[:0]
        block = 256
        for start in range(0, n, block):
            rows = fields[start : start + block]
            b = rows.shape[0]
            beaten = np.zeros(b, dtype=bool)
            for k0 in range(0, kept.shape[0], max(1, 2_000_000 // (b * fields.shape[1]))):
                part = kept[k0 : k0 + max(1, 2_000_000 // (b * fields.shape[1]))]
                beaten |= np.any(np.all(part[None, :, :] <= rows[:, None, :], axis=2), axis=1)
            inner = np.all(rows[None, :, :] <= rows[:, None, :], axis=2)
            beaten |= np.any(inner & (np.arange(b)[None, :] < np.arange(b)[:, None]), axis=1)
            dominated[start : start + b] = beaten
            kept = np.concatenate([kept, rows[~beaten]])
    idx = order[~dominated]
    return Labels(
        lab.cost[idx], lab.total[idx], lab.top[idx], lab.ahead[idx], lab.usage[idx],
        lab.parent[idx],
    )


def _concat(parts: list[Labels], n_capped: int) -> Labels | None:
    parts = [p for p in parts if p.size]
    if not parts:
        return None
    return Labels(
        np.concatenate([p.cost for p in parts]),
        np.concatenate([p.total for p in parts]),
        np.concatenate([p.top for p in parts]),
        np.concatenate([p.ahead for p in parts]),
        np.concatenate([p.usage for p in parts]),
        np.concatenate([p.parent for p in parts]),
    )


@dataclass(frozen=True)
class Solution:
    runs: list[tuple[int, int, str, int]]  # (first, last, resource, units)
    cost: float
    throughput: float


class LabelDP:
    """Best chain of candidate stages: DP over (layer prefix, last resource) with labels.

    `candidates[last]` lists the `Options` of the stages that end at layer `last`; `capped`
    resources get a usage field (their caps enforced); the others are checked per stage only.
    `extra_rate` caps the plan's throughput (the parameter server's rate).
    """

    def __init__(
        self, instance: Instance, candidates: dict[int, list[Options]], capped: Sequence[str],
        counts: dict[str, int], extra_rate: float = math.inf,
        upper: float = math.inf, bound: LabelBound | None = None,
    ) -> None:
        self.instance = instance
        # Certified pruning from outside (the exact search's Lagrangian bounds; the search
        # checks its CPU budget there, heterps_core/budget.py).
        self.bound = bound
        # Pruning (exact): a label dearer than the cost `upper` of a known plan (ties kept)
        # cannot lead to an optimum.
        self.limit = upper * (1 + 2 * REL_TOL) + 1e-9
        self.candidates = candidates
        self.capped = list(capped)
        self.counts = counts
        self.extra_rate = extra_rate
        self.names = instance.resource_names
        # _sources[j][r][t]: the Options behind part t of state (j, r), for reconstruction
        self._sources: list[dict[int, list[Options]]] = []

    def solve(self) -> Solution | None:
        inst = self.instance
        n, names = len(inst.layers), self.names
        n_cap = len(self.capped)
        cap_col = {r: c for c, r in enumerate(self.capped)}
        cap_max = np.array([self.counts[r] for r in self.capped], dtype=np.int64)
        budget = (1 / inst.throughput_target) * (1 + REL_TOL)
        micro = inst.micro_batches
        table: list[dict[int, Labels]] = []  # table[j][r]
        root = _root(n_cap)
        root_from = (np.array([-1]), np.array([0]))
        merged: dict[tuple[int, int], tuple[Labels, np.ndarray, np.ndarray] | None] = {}
        for j in range(n):
            parts: dict[int, list[Labels]] = {}
            sources: dict[int, list[Options]] = {}
            for opt in self.candidates.get(j, []):
                r = names.index(opt.resource)
                if opt.first == 0:
                    inputs = [(root, *root_from)]
                else:
                    key = (opt.first - 1, r)
                    if key not in merged:
                        merged[key] = self._merge(table[opt.first - 1], r, n_cap, micro)
                    found = merged[key]
                    inputs = [found] if found is not None else []
                for src, src_q, src_idx in inputs:
                    lab = self._extend(src, opt, src_q, src_idx, cap_col.get(opt.resource))
                    ok = lab.total / micro + (1 - 1 / micro) * lab.top <= budget
                    if n_cap:
                        ok &= np.all(lab.usage <= cap_max[None, :], axis=1)
                    ok &= lab.cost <= self.limit
                    if self.bound is not None and ok.any():
                        ok &= self.bound(lab, j, r, self.capped)
                    if not ok.any():
                        continue
                    origin = len(parts.get(r, []))
                    parent = np.column_stack([lab.parent[ok], np.full(int(ok.sum()), origin)])
                    parts.setdefault(r, []).append(Labels(
                        lab.cost[ok], lab.total[ok], lab.top[ok], lab.ahead[ok], lab.usage[ok],
                        parent,
                    ))
                    sources.setdefault(r, []).append(opt)
            row: dict[int, Labels] = {}
            for r, labs in parts.items():
                joined = _concat(labs, n_cap)
                if joined is not None:
                    row[r] = _pareto(joined, micro)
            table.append(row)
            self._sources.append(sources)
        return self._best(table, n)

    @staticmethod
    def _merge(
        row: dict[int, Labels], r: int, n_cap: int, micro: int
    ) -> tuple[Labels, np.ndarray, np.ndarray] | None:
        """Every label of states (j, q != r), those dominated among them dropped: a stage on
        r may follow any of them, and the extension of a dominated one stays dominated.
        Returns the labels with each one's source state and index."""
        parts = []
        for q, lab in row.items():
            if q == r:
                continue
            tag = np.column_stack([
                np.full(lab.size, q), np.arange(lab.size), np.zeros((lab.size, 2), dtype=np.int64)
            ])
            parts.append(Labels(lab.cost, lab.total, lab.top, lab.ahead, lab.usage, tag))
        joined = _concat(parts, n_cap)
        if joined is None:
            return None
        kept = _pareto(joined, micro)
        return kept, kept.parent[:, 0], kept.parent[:, 1]

    def _extend(
        self, src: Labels, opt: Options, src_q: np.ndarray, src_idx: np.ndarray,
        cap: int | None,
    ) -> Labels:
        """Every label of `src` followed by every unit count of `opt`."""
        inst = self.instance
        s, m = src.size, opt.units.size
        cost = (src.cost[:, None] + opt.cost[None, :]).reshape(-1)
        if opt.ahead:
            total = np.repeat(src.total, m)
            top = np.repeat(src.top, m)
            rate = opt.units * inst.batch_size / opt.time_s
            ahead = np.minimum(src.ahead[:, None], rate[None, :]).reshape(-1)
        else:
            total = (src.total[:, None] + opt.per_sample[None, :]).reshape(-1)
            top = np.maximum(src.top[:, None], opt.per_sample[None, :]).reshape(-1)
            ahead = np.repeat(src.ahead, m)
        usage = np.repeat(src.usage, m, axis=0)
        if cap is not None:
            usage[:, cap] += np.tile(opt.units, s)
        parent = np.column_stack([
            np.full(s * m, opt.first), np.tile(np.arange(m), s),
            np.repeat(src_q, m), np.repeat(src_idx, m),
        ])
        return Labels(cost, total, top, ahead, usage, parent)

    def _best(self, table: list[dict[int, Labels]], n: int) -> Solution | None:
        inst = self.instance
        best: tuple[float, float, int, int] | None = None
        for r, lab in table[n - 1].items():
            rate = np.minimum(
                np.minimum(lab.ahead, turns_rate(lab.total, lab.top, inst.micro_batches)),
                self.extra_rate,
            )
            for i in range(lab.size):
                cost_i, rate_i = float(lab.cost[i]), float(rate[i])
                if best is None or better_total(cost_i, rate_i, best[0], best[1]):
                    best = (cost_i, rate_i, r, i)
        if best is None:
            return None
        cost, rate, r, i = best
        runs: list[tuple[int, int, str, int]] = []
        j = n - 1
        while j >= 0:
            first, opt_idx, q, src, origin = (int(v) for v in table[j][r].parent[i])
            opt = self._sources[j][r][origin]
            runs.append((first, j, self.names[r], int(opt.units[opt_idx])))
            j, r, i = first - 1, q, src
        runs.reverse()
        return Solution(runs, cost, rate)


def better_total(cost: float, rate: float, best_cost: float, best_rate: float) -> bool:
    if not costs_equal(cost, best_cost):
        return cost < best_cost
    return rate > best_rate * (1 + REL_TOL)

