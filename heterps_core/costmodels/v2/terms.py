"""The v2 time terms of a candidate stage and its useful unit counts.

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
"""

from __future__ import annotations

import numpy as np

from heterps_core.costmodels import market
from heterps_core.costmodels.base import Options
from heterps_core.costmodels.chain import ChainCosts
from heterps_core.costmodels.common import REL_TOL, describe, prefix
from heterps_core.costmodels.v2.server import server_need, server_row_wait_s
from heterps_core.instance import Instance
from heterps_core.plan import ServerPlacement


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
        self._pull = prefix([lyr.sparse_pull_mb for lyr in layers])
        self._push = prefix([lyr.sparse_push_mb for lyr in layers])
        self._rows = prefix([lyr.sparse_rows for lyr in layers])
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
        compute = costs.compute_s(first, last, resource)
        t_in, t_out = costs.traffic_s(first, last, bw)
        sync_s = 2 * costs.sync_mb(first, last) * 1e6 / bw
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
        fixed, sharded = self.costs.memory_split(first, last)
        # With a parameter server the tables live on its shards; without one they split
        # over the stage's units as in v1.
        return (fixed, 0.0) if self.server else (fixed, sharded)



def stage_options(terms: StageTerms, first: int, last: int, resource: str) -> Options | str:
    """Every useful k (or why none exists): smallest k meeting the target on its own for an
    ahead stage; for a stage taking turns every k from that one up, kept only where more
    units make the stage faster (a slower dearer option is never better)."""
    inst = terms.instance
    res = inst.resource(resource)
    what = describe(inst, first, last)
    if not terms.costs.runs_on(first, last, resource):
        return terms.costs.cannot_run(first, last, resource)
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
        market.unit_costs(res, units, fixed + sharded / units), times[pick], per_sample[pick],
    )


def sync_label(instance: Instance) -> str:
    """The sync mode and micro-batches, as reasons name them."""
    return f"{instance.sync}, {instance.micro_batches} micro-batch" + (
        "es" if instance.micro_batches > 1 else ""
    )
