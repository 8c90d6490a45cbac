"""Every candidate stage's useful unit counts under cost model v2, priced at once with numpy.

`terms.stage_options` prices one stage (i..j on r); calling it for all `L(L+1)/2 x R`
stages of a 64-layer chain costs more than the whole exact search should (0.7 s). This module
repeats its arithmetic operation for operation on arrays (same prefix sums, same order of
additions, same tolerances), so every option gets exactly the units, cost and time the scalar
code gives it; `tests/heterps_core/schedulers/test_options_v2.py` checks that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heterps_core.costmodels import market
from heterps_core.costmodels.base import Options
from heterps_core.costmodels.common import REL_TOL
from heterps_core.costmodels.v2.terms import StageTerms

# Rows of (stage x unit count) priced per numpy pass: bounds the memory of a pass.
_CHUNK_CELLS = 1 << 21


@dataclass(frozen=True)
class OptionTable:
    """Flat arrays, one entry per option (a stage with one unit count); a stage's options are
    contiguous, in increasing units (stages by resource, then first layer, then last layer).

    `cand` numbers the stages; `starts[c]` is where stage c's options begin."""

    first: np.ndarray  # per option
    last: np.ndarray
    res: np.ndarray  # resource index
    ahead: np.ndarray  # bool
    units: np.ndarray  # int
    cost: np.ndarray
    time_s: np.ndarray
    per_sample: np.ndarray
    cand: np.ndarray
    starts: np.ndarray  # per stage

    @property
    def size(self) -> int:
        return int(self.units.size)

    def select(self, keep: np.ndarray) -> OptionTable:
        """The options where `keep` is true (stages left without options disappear)."""
        if keep.all():
            return self
        first, last, res = self.first[keep], self.last[keep], self.res[keep]
        cand, starts = _stages(first, last, res)
        return OptionTable(
            first, last, res, self.ahead[keep], self.units[keep], self.cost[keep],
            self.time_s[keep], self.per_sample[keep], cand, starts,
        )

    def within(self, counts: dict[str, int], names: list[str]) -> OptionTable:
        """The options that fit `counts` (a count lowered by the parameter server's shards):
        the same options `stage_options` gives with those counts, since every choice it
        makes about k depends on the counts below k only."""
        limit = np.array([counts[r] for r in names])
        return self.select(self.units <= limit[self.res])

    def candidates(self, names: list[str]) -> dict[int, list[Options]]:
        """The options as `Options` per stage, keyed by last layer (the label DP's input)."""
        out: dict[int, list[Options]] = {}
        ends = np.append(self.starts[1:], self.size)
        for s, e in zip(self.starts.tolist(), ends.tolist(), strict=True):
            out.setdefault(int(self.last[s]), []).append(Options(
                int(self.first[s]), int(self.last[s]), names[int(self.res[s])],
                bool(self.ahead[s]), self.units[s:e], self.cost[s:e], self.time_s[s:e],
                self.per_sample[s:e],
            ))
        return out


def chain_table(opts: list[Options], names: list[str]) -> OptionTable:
    """The options of given stages (one assignment's chain) as a table."""
    sizes = [o.units.size for o in opts]
    stage = np.repeat(np.arange(len(opts)), sizes)
    first = np.array([o.first for o in opts], dtype=np.int64)[stage]
    last = np.array([o.last for o in opts], dtype=np.int64)[stage]
    res = np.array([names.index(o.resource) for o in opts], dtype=np.int64)[stage]
    ahead = np.array([o.ahead for o in opts], dtype=bool)[stage]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return OptionTable(
        first, last, res, ahead, np.concatenate([o.units for o in opts]).astype(np.int64),
        np.concatenate([o.cost for o in opts]), np.concatenate([o.time_s for o in opts]),
        np.concatenate([o.per_sample for o in opts]), stage.astype(np.int64), starts,
    )


def option_table(terms: StageTerms) -> OptionTable:
    """Every option of every candidate stage (the vector form of `stage_options`)."""
    inst = terms.instance
    n = terms.n_layers
    names = inst.resource_names
    firsts, lasts = np.triu_indices(n)
    parts: list[tuple[np.ndarray, ...]] = []
    for r, name in enumerate(names):
        count = terms.counts[name]
        if count < 1:
            continue
        step = max(1, _CHUNK_CELLS // count)
        for s in range(0, firsts.size, step):
            got = _price(terms, r, name, count, firsts[s : s + step], lasts[s : s + step])
            if got is not None:
                parts.append(got)
    if not parts:
        empty_i = np.zeros(0, dtype=np.int64)
        empty_f = np.zeros(0)
        return OptionTable(empty_i, empty_i, empty_i, np.zeros(0, dtype=bool), empty_i, empty_f,
                           empty_f, empty_f, empty_i, empty_i)
    first, last, res, ahead, units, cost, time_s, per_sample = (
        np.concatenate([p[i] for p in parts]) for i in range(8)
    )
    # rows come out stage by stage (units increasing within a stage): number the stages
    cand, starts = _stages(first, last, res)
    return OptionTable(first, last, res, ahead, units, cost, time_s, per_sample, cand, starts)


def _stages(first: np.ndarray, last: np.ndarray, res: np.ndarray) -> tuple[np.ndarray, ...]:
    new_stage = np.ones(first.size, dtype=bool)
    if first.size:
        new_stage[1:] = (first[1:] != first[:-1]) | (last[1:] != last[:-1]) | (res[1:] != res[:-1])
    return np.cumsum(new_stage) - 1, np.flatnonzero(new_stage)


def _price(
    terms: StageTerms, r: int, name: str, count: int, first: np.ndarray, last: np.ndarray
) -> tuple[np.ndarray, ...] | None:
    inst, costs = terms.instance, terms.costs
    res = inst.resource(name)
    n = terms.n_layers
    missing = np.asarray(costs._missing[name])
    runs = missing[last + 1] - missing[first] == 0
    first, last = first[runs], last[runs]
    if not first.size:
        return None
    bw = res.bandwidth_bytes_per_s
    compute_sum = np.asarray(costs._compute[name])
    compute = (compute_sum[last + 1] - compute_sum[first])[:, None]
    out_mb = np.array([lyr.output_mb for lyr in inst.layers])
    prev_out = out_mb[np.maximum(first - 1, 0)]
    t_in = np.where(first == 0, inst.input_mb * 1e6 / bw, 2 * prev_out * 1e6 / bw)[:, None]
    t_out = np.where(last == n - 1, 0.0, 2 * out_mb[last] * 1e6 / bw)[:, None]
    sync_mb = np.asarray(costs._sync_mb)
    sync_s = (2 * (sync_mb[last + 1] - sync_mb[first]) * 1e6 / bw)[:, None]
    wait = np.zeros((first.size, 1))
    if terms.server:
        # StageTerms.row_wait: the pull and push traffic, then the server's work on the rows
        push_sum, pull_sum = np.asarray(terms._push), np.asarray(terms._pull)
        rows_sum = np.asarray(terms._rows)
        traffic = (pull_sum[last + 1] - pull_sum[first] + push_sum[last + 1]
                   - push_sum[first]) * 1e6 / bw
        wait = (traffic + (rows_sum[last + 1] - rows_sum[first]) * terms.row_wait_s)[:, None]
    k = np.arange(1, count + 1, dtype=np.float64)[None, :]
    reduce = (k - 1) / k * sync_s
    ahead = _runs_ahead(terms, last)
    times = np.where(
        ahead[:, None],
        np.maximum(compute + wait, t_in + t_out) + reduce,
        t_in + t_out + compute + wait + reduce,
    )
    fixed_sum, sharded_sum = np.asarray(costs._fixed_gb), np.asarray(costs._sharded_gb)
    fixed = (fixed_sum[last + 1] - fixed_sum[first])[:, None]
    sharded = (sharded_sum[last + 1] - sharded_sum[first])[:, None]
    if terms.server:
        sharded = np.zeros_like(sharded)
    k_int = np.arange(1, count + 1)[None, :]
    fits = fixed + sharded / k_int <= res.memory_gb * (1 + REL_TOL)
    per_sample = times / (k_int * inst.batch_size)
    meets = k_int * inst.batch_size / times >= inst.throughput_target * (1 - REL_TOL)
    ok = fits & meets
    has = ok.any(axis=1)
    lo = np.argmax(ok, axis=1)
    col = np.arange(count)[None, :]
    # ahead: the smallest k only; taking turns: every k from it on that fits and is faster
    # than every smaller one kept (a slower, dearer option is never better)
    valid = (col >= lo[:, None]) & fits & has[:, None]
    masked = np.where(valid, per_sample, np.inf)
    running = np.minimum.accumulate(masked, axis=1)
    before = np.concatenate([np.full((first.size, 1), np.inf), running[:, :-1]], axis=1)
    pick = valid & (masked < before)
    pick &= ~ahead[:, None] | (col == lo[:, None])
    rows, cols = np.nonzero(pick)
    units = cols + 1
    return (
        first[rows], last[rows], np.full(rows.size, r, dtype=np.int64), ahead[rows],
        units.astype(np.int64),
        market.unit_costs(res, units, fixed[rows, 0] + sharded[rows, 0] / units),
        times[rows, cols],
        per_sample[rows, cols],
    )


def _runs_ahead(terms: StageTerms, last: np.ndarray) -> np.ndarray:
    if terms.instance.sync != "async":
        return np.zeros(last.size, dtype=bool)
    return (last < terms.n_layers - 1) & (last < terms.first_dense)
