"""The cost model v2 (docs/cost-model.md, "Cost model v2"): sync mode, micro-batches,
sparse traffic and the parameter server, priced as the runtime behaves.

Stages come in two kinds (decided by the stage's layers alone, so the exact search stays a
DP over the chain):

- *ahead*: in `async`, a stage with no dense weights in it or before it (and not the last
  one) runs one mini-batch ahead of the rest (runtime/sync.py `run_ahead`); it overlaps
  everything, so only its own rate counts: `theta = k B / T(k)`, T(k) = max(compute + row
  wait, in + out) + all-reduce (the runtime posts receives early and settles sends late).
- *turns*: every other stage (all of them in `bsp`). These stages take turns on each
  mini-batch and overlap only across its M micro-batches (GPipe):
  `1 / throughput_turns = sum_s a_s / M + (1 - 1/M) max_s a_s`, a_s = T_s(k_s) / (k_s B),
  with T(k) = in + out + compute + row wait + all-reduce.

The row wait (`StageTerms.row_wait`) is a sparse stage's pull and push plus the server's work
on its rows: serial, since the stage blocks on the pull and the server applies its previous
push first.

Units are then no longer a per-stage choice: the stages that take turns share one time
budget, so `provision` picks every stage's unit count together (cheapest first, the objective's
tie-break on throughput). The same label DP provisions a given assignment (`evaluate_v2`) and
searches all of them (`exact_v2`): labels (cost, sum a, max a, min ahead rate, units on capped
resources) are kept per state when no other label is at least as good in every field, which is
the exchange argument of docs/schedulers.md with a vector-valued state.

The parameter server is one more stage-like role: `shards` units of one host type, sized by the
whole tables (a shard keeps every row it owns, row g on shard g mod n, with optimiser state)
and by the rows/bytes per second it must serve; priced at the host's price. Its placement does
not depend on the assignment, so the exact optimum is the best over host types of
(server cost + the stage optimum with the host's count reduced by the shards).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from heterps_core.costmodel import REL_TOL, ChainCosts, check_assignment, costs_equal, stages_of
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement, Stage

Run = tuple[int, int, str]
# keep(labels, last layer j, resource index r of state (j, r), tracked resources) -> bool mask:
# False only for labels that provably cannot complete into a plan no dearer than the best known
LabelBound = Callable[["Labels", int, int, Sequence[str]], np.ndarray]


# --- the terms ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerNeed:
    """What the parameter server must hold and serve per mini-batch (assignment-free)."""

    table_gb: float
    bytes_per_batch: float  # pulls + pushes of every sparse layer
    rows_per_batch: float

    @property
    def needed(self) -> bool:
        return self.table_gb > 0 or self.bytes_per_batch > 0 or self.rows_per_batch > 0


def server_need(instance: Instance) -> ServerNeed | None:
    """None when the instance has no parameter-server role (tables stay with their stage)."""
    if instance.parameter_server is None:
        return None
    layers = instance.layers
    need = ServerNeed(
        table_gb=sum(lyr.memory_gb for lyr in layers if lyr.shardable),
        bytes_per_batch=sum((lyr.sparse_pull_mb + lyr.sparse_push_mb) * 1e6 for lyr in layers),
        rows_per_batch=sum(lyr.sparse_rows for lyr in layers),
    )
    return need if need.needed else None


def place_server(
    instance: Instance, host: str, need: ServerNeed
) -> tuple[ServerPlacement | None, str | None]:
    """The fewest shards of `host` that hold the tables and serve the target rate."""
    res = instance.resource(host)
    assert instance.parameter_server is not None
    row_s = instance.parameter_server.row_s.get(host, 0.0)
    # One shard serving every row and byte of a mini-batch; n shards split both evenly
    # (rows are spread by g mod n). Pulls are counted even for stages that will not make
    # them (a one-unit stage keeps its own rows current): the server is sized for any plan.
    one_shard_s = need.bytes_per_batch / res.bandwidth_bytes_per_s + need.rows_per_batch * row_s
    limit = res.memory_gb * (1 + REL_TOL)
    k_mem = max(1, math.ceil(need.table_gb / res.memory_gb)) if need.table_gb else 1
    while k_mem > 1 and need.table_gb / (k_mem - 1) <= limit:
        k_mem -= 1
    while need.table_gb / k_mem > limit:
        k_mem += 1
    target = instance.throughput_target * (1 - REL_TOL)
    k_rate = 1
    if one_shard_s > 0:
        k_rate = max(1, math.ceil(instance.throughput_target * one_shard_s / instance.batch_size))
        while k_rate > 1 and (k_rate - 1) * instance.batch_size / one_shard_s >= target:
            k_rate -= 1
        while k_rate * instance.batch_size / one_shard_s < target:
            k_rate += 1
    shards = max(k_mem, k_rate)
    if shards > res.count:
        why = "to hold the tables" if k_mem >= k_rate else "to serve the target's rows"
        return None, f"the parameter server needs {shards} units of {host} {why}, {res.count} exist"
    time_s = one_shard_s / shards
    rate = math.inf if time_s == 0 else instance.batch_size / time_s
    return (
        ServerPlacement(
            resource=host,
            shards=shards,
            time_per_batch_s=time_s,
            throughput=rate,
            cost_per_hour=shards * res.price_per_hour,
            memory_gb=need.table_gb / shards,
        ),
        None,
    )


def server_row_wait_s(instance: Instance, server: ServerPlacement | None) -> float:
    """Seconds a stage waits per sparse row it pulls and pushes, with the shards `server`
    places: the host's `row_s` over the shards (rows are spread g mod n)."""
    if server is None or instance.parameter_server is None:
        return 0.0
    return instance.parameter_server.row_s.get(server.resource, 0.0) / server.shards


class StageTerms:
    """Per candidate stage (i..j on r) the v2 time terms, from prefix sums."""

    def __init__(self, instance: Instance, counts: dict[str, int] | None = None,
                 server: ServerPlacement | None = None) -> None:
        """`server`: where the shards sit, which sets how long a stage waits for its rows
        (the server's work per row on its host, split over the shards). Without it that
        work is left out, which only makes stages faster: a valid relaxation for bounds."""
        self.instance = instance
        self.costs = ChainCosts(instance)
        self.counts = counts or {r.name: r.count for r in instance.resources}
        layers = instance.layers
        self.n_layers = len(layers)
        self.server = server_need(instance) is not None
        self._pull = _prefix([lyr.sparse_pull_mb for lyr in layers])
        self._push = _prefix([lyr.sparse_push_mb for lyr in layers])
        self._rows = _prefix([lyr.sparse_rows for lyr in layers])
        self.row_wait_s = server_row_wait_s(instance, server)
        dense = [i for i, lyr in enumerate(layers) if lyr.sync_mb > 0]
        self.first_dense = dense[0] if dense else self.n_layers
        self.micro = instance.micro_batches

    def runs_ahead(self, first: int, last: int) -> bool:
        """async: no dense weights in layers 0..last and not the last stage (runtime rule)."""
        if self.instance.sync != "async":
            return False
        return last < self.n_layers - 1 and last < self.first_dense

    def times(self, first: int, last: int, resource: str) -> np.ndarray:
        """T(k) for k = 1..count (index k-1)."""
        inst, costs = self.instance, self.costs
        bw = inst.resource(resource).bandwidth_bytes_per_s
        layers = inst.layers
        compute = costs._compute[resource][last + 1] - costs._compute[resource][first]
        t_in = (
            inst.input_mb * 1e6 / bw if first == 0 else 2 * layers[first - 1].output_mb * 1e6 / bw
        )
        t_out = 0.0 if last == self.n_layers - 1 else 2 * layers[last].output_mb * 1e6 / bw
        sync_s = 2 * (costs._sync_mb[last + 1] - costs._sync_mb[first]) * 1e6 / bw
        k = np.arange(1, self.counts[resource] + 1, dtype=np.float64)
        reduce = (k - 1) / k * sync_s
        wait = self.row_wait(first, last, bw)
        if self.runs_ahead(first, last):
            return np.maximum(compute + wait, t_in + t_out) + reduce
        return t_in + t_out + compute + wait + reduce

    def row_wait(self, first: int, last: int, bw: float) -> float:
        """Seconds per mini-batch a stage of layers first..last waits for the parameter
        server: its pull blocks the forward pass, and the server answers it only after
        applying the stage's previous push (one sender's messages arrive in order,
        runtime/ps.py), so both transfers and the server's work on those rows are serial
        with the stage's compute. Every unit count pulls: stages hold no table."""
        if not self.server:
            return 0.0
        traffic = (self._pull[last + 1] - self._pull[first]
                   + self._push[last + 1] - self._push[first]) * 1e6 / bw
        return traffic + (self._rows[last + 1] - self._rows[first]) * self.row_wait_s

    def memory_gb(self, first: int, last: int) -> tuple[float, float]:
        """(per-unit memory that does not split, memory that splits over the units)."""
        costs = self.costs
        fixed = costs._fixed_gb[last + 1] - costs._fixed_gb[first]
        sharded = costs._sharded_gb[last + 1] - costs._sharded_gb[first]
        # With a parameter server the tables live on its shards; without one they split
        # over the stage's units as in v1.
        return (fixed, 0.0) if self.server else (fixed, sharded)


@dataclass(frozen=True)
class Options:
    """The unit counts worth considering for one candidate stage."""

    first: int
    last: int
    resource: str
    ahead: bool
    units: np.ndarray  # int
    cost: np.ndarray
    time_s: np.ndarray  # T(k)
    per_sample: np.ndarray  # T(k) / (k B)


def stage_options(terms: StageTerms, first: int, last: int, resource: str) -> Options | str:
    """Every useful k (or why none exists): smallest k meeting the target on its own for an
    ahead stage; for a stage taking turns every k from that one up, kept only where more
    units make the stage faster (a slower dearer option is never better)."""
    inst = terms.instance
    res = inst.resource(resource)
    what = _describe(inst, first, last)
    if not terms.costs.runs_on(first, last, resource):
        bad = next(i for i in range(first, last + 1) if not inst.layers[i].runs_on(resource))
        return f"layer {inst.layers[bad].name} cannot run on {resource}"
    fixed, sharded = terms.memory_gb(first, last)
    count = terms.counts[resource]
    limit = res.memory_gb * (1 + REL_TOL)
    if count < 1:
        return f"{what} needs units of {resource}, none are left"
    k = np.arange(1, count + 1)
    fits = fixed + sharded / k <= limit
    if not fits.any():
        if fixed > limit:
            return (
                f"{what} needs {fixed:g} GB of non-shardable memory per unit; "
                f"{res.name} has {res.memory_gb:g} GB"
            )
        return f"{what} needs more than {count} units of {res.name} to hold its memory"
    times = terms.times(first, last, resource)
    per_sample = times / (k * inst.batch_size)
    meets = k * inst.batch_size / times >= inst.throughput_target * (1 - REL_TOL)
    ok = fits & meets
    if not ok.any():
        return f"{what} needs more than {count} units of {res.name} to reach " + (
            f"{inst.throughput_target:g} samples/s"
        )
    lo = int(np.argmax(ok))
    ahead = terms.runs_ahead(first, last)
    if ahead:
        pick = np.array([lo])
    else:
        cand = np.arange(lo, count)
        cand = cand[fits[cand]]
        running = np.minimum.accumulate(per_sample[cand])
        better = np.ones(cand.size, dtype=bool)
        better[1:] = per_sample[cand][1:] < running[:-1]
        pick = cand[better]
    units = pick + 1
    return Options(
        first, last, resource, ahead, units.astype(np.int64),
        units * res.price_per_hour, times[pick], per_sample[pick],
    )


# --- the label DP -----------------------------------------------------------------------------


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
                if best is None or _better(cost_i, rate_i, best[0], best[1]):
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


def _better(cost: float, rate: float, best_cost: float, best_rate: float) -> bool:
    if not costs_equal(cost, best_cost):
        return cost < best_cost
    return rate > best_rate * (1 + REL_TOL)


def _describe(instance: Instance, first: int, last: int) -> str:
    names = instance.layers
    if first == last:
        return f"layer {names[first].name}"
    return f"stage {names[first].name}..{names[last].name}"


def _prefix(values: Sequence[float]) -> list[float]:
    out = [0.0]
    for v in values:
        out.append(out[-1] + v)
    return out

# --- plans ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Choice:
    """One placement of the parameter server (or none) and the unit counts it leaves."""

    server: ServerPlacement | None
    counts: dict[str, int]


def _server_choices(instance: Instance) -> tuple[list[_Choice], list[str]]:
    counts = {r.name: r.count for r in instance.resources}
    need = server_need(instance)
    if need is None:
        return [_Choice(None, counts)], []
    assert instance.parameter_server is not None
    choices, reasons = [], []
    for host in instance.parameter_server.hosts:
        placement, why = place_server(instance, host, need)
        if placement is None:
            reasons.append(why or f"no parameter server fits on {host}")
            continue
        left = dict(counts)
        left[host] -= placement.shards
        choices.append(_Choice(placement, left))
    return choices, reasons


def greedy_units(
    instance: Instance, opts: Sequence[Options], counts: dict[str, int]
) -> list[int] | None:
    """Option indices that fit the caps and the shared time budget, found by adding the unit
    step that buys the most time per dollar until the budget holds (None if it never does).
    A quick feasible plan, used as an upper bound; not necessarily the cheapest."""
    pick = [0] * len(opts)
    micro = instance.micro_batches
    budget = (1 / instance.throughput_target) * (1 + REL_TOL)

    def cycle(choice: list[int]) -> float:
        turns = [float(o.per_sample[i]) for o, i in zip(opts, choice, strict=True) if not o.ahead]
        return sum(turns) / micro + (1 - 1 / micro) * max(turns) if turns else 0.0

    def fits(choice: list[int]) -> bool:
        used: dict[str, int] = {}
        for o, i in zip(opts, choice, strict=True):
            used[o.resource] = used.get(o.resource, 0) + int(o.units[i])
        return all(u <= counts[r] for r, u in used.items())

    if not fits(pick):
        return None
    while cycle(pick) > budget:
        best: tuple[float, int] | None = None
        now = cycle(pick)
        for s, o in enumerate(opts):
            if o.ahead or pick[s] + 1 >= o.units.size:
                continue
            trial = list(pick)
            trial[s] += 1
            if not fits(trial):
                continue
            gain = (now - cycle(trial)) / float(o.cost[pick[s] + 1] - o.cost[pick[s]])
            if best is None or gain > best[0]:
                best = (gain, s)
        if best is None:
            return None
        pick[best[1]] += 1
    return pick


def _solve_choice(
    instance: Instance, choice: _Choice, assignment: Sequence[str]
) -> tuple[Solution | None, str]:
    """The cheapest unit counts for one assignment and one server placement (exact: the label
    DP over its stages, pruned by the bounds of heterps_core/schedulers/exact_v2.py)."""
    from heterps_core.schedulers.exact_v2 import allocate

    terms = StageTerms(instance, choice.counts, choice.server)
    chain: list[Options] = []
    reasons = []
    for first, last, res in stages_of(assignment):
        opt = stage_options(terms, first, last, res)
        if isinstance(opt, str):
            reasons.append(opt)
            continue
        chain.append(opt)
    if reasons:
        return None, "; ".join(reasons)
    solution = allocate(instance, choice, chain)
    if solution is None:
        return None, _no_provisioning_reason(instance, terms, assignment, choice)
    return solution, ""


def _no_provisioning_reason(
    instance: Instance, terms: StageTerms, assignment: Sequence[str], choice: _Choice
) -> str:
    runs = stages_of(assignment)
    used: dict[str, int] = {}
    for first, last, res in runs:
        opt = stage_options(terms, first, last, res)
        if not isinstance(opt, str):
            used[res] = used.get(res, 0) + int(opt.units[0])
    over = [f"stages on {r} need {u} units in total, {choice.counts[r]} exist"
            for r, u in used.items() if u > choice.counts[r]]
    if over:
        return "; ".join(over)
    return (
        f"the stages that take turns ({_mode(instance)}) cannot reach "
        f"{instance.throughput_target:g} samples/s together with the units available"
    )


def _mode(instance: Instance) -> str:
    return f"{instance.sync}, {instance.micro_batches} micro-batch" + (
        "es" if instance.micro_batches > 1 else ""
    )


def solve_v2(instance: Instance, assignment: Sequence[str] | None, scheduler: str) -> Plan:
    """`evaluate` (with an assignment) or `exact` (without) under the v2 model."""
    if assignment is None:
        from heterps_core.schedulers.exact_v2 import exact_v2

        plan = exact_v2(instance)
        return plan if scheduler == "exact" else plan.with_scheduler(scheduler)
    check_assignment(instance, assignment)
    choices, reasons = _server_choices(instance)
    best: tuple[Solution, _Choice] | None = None
    for choice in choices:
        solution, why = _solve_choice(instance, choice, assignment)
        if solution is None:
            reasons.append(why)
            continue
        server_cost = choice.server.cost_per_hour if choice.server else 0.0
        total = solution.cost + server_cost
        if best is None or _better(
            total, solution.throughput,
            best[0].cost + (best[1].server.cost_per_hour if best[1].server else 0.0),
            best[0].throughput,
        ):
            best = (solution, choice)
    if best is None:
        return _infeasible(instance, scheduler, "; ".join(dict.fromkeys(reasons)), assignment)
    return build_plan(instance, best[0].runs, best[1].server, scheduler, best[1].counts)


def build_plan(
    instance: Instance, runs: Sequence[tuple[int, int, str, int]],
    server: ServerPlacement | None, scheduler: str, counts: dict[str, int] | None = None,
) -> Plan:
    """A feasible v2 plan from its stages' unit counts (every number from the terms above)."""
    terms = StageTerms(instance, counts, server)
    stages = []
    total = top = 0.0
    ahead = math.inf
    for first, last, res, units in runs:
        time_s = float(terms.times(first, last, res)[units - 1]) if units <= terms.counts[res] \
            else float(StageTerms(instance, server=server).times(first, last, res)[units - 1])
        rate = units * instance.batch_size / time_s
        runs_ahead = terms.runs_ahead(first, last)
        if runs_ahead:
            ahead = min(ahead, rate)
        else:
            total += 1 / rate
            top = max(top, 1 / rate)
        stages.append(Stage(tuple(range(first, last + 1)), res, units, time_s, rate, runs_ahead))
    turns = float(turns_rate(np.array([total]), np.array([top]), instance.micro_batches)[0])
    throughput = min(ahead, turns, server.throughput if server else math.inf)
    cost = sum(units * instance.resource(res).price_per_hour for _, _, res, units in runs)
    cost += server.cost_per_hour if server else 0.0
    hours = total_cost = None
    if instance.samples is not None:
        hours = instance.samples / throughput / 3600
        total_cost = cost * hours
    return Plan(
        scheduler=scheduler,
        feasible=True,
        assignment=tuple(res for first, last, res, _ in runs for _ in range(first, last + 1)),
        stages=tuple(stages),
        throughput=throughput,
        cost_per_hour=cost,
        hours=hours,
        total_cost=total_cost,
        sync=instance.sync,
        micro_batches=instance.micro_batches,
        parameter_server=server,
        cost_model=2,
    )


def _infeasible(
    instance: Instance, scheduler: str, reason: str, assignment: Sequence[str] | None
) -> Plan:
    return Plan(
        scheduler=scheduler,
        feasible=False,
        assignment=tuple(assignment) if assignment is not None else None,
        reason=reason or "no plan",
        sync=instance.sync,
        micro_batches=instance.micro_batches,
        cost_model=2,
    )


# Public names for the exact search (heterps_core/schedulers/exact_v2.py).
server_choices = _server_choices
solve_choice = _solve_choice
sync_label = _mode
infeasible_v2 = _infeasible
