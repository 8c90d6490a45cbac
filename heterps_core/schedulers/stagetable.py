"""Every candidate stage (layers i..j on resource r) provisioned at once, with numpy.

The exact solver and the frontier price all L(L+1)/2 x R candidate stages; doing that one
`ChainCosts.provision` call at a time costs ~1 s for 64 layers. This module repeats the
cost model's arithmetic *operation for operation* on arrays (same prefix sums, same order of
additions, same tolerance rules), so a stage gets the very units `provision` would give it;
`tests/heterps_core/schedulers/test_stagetable.py` checks that on random instances.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from heterps_core.costmodels import market
from heterps_core.costmodels.chain import ChainCosts
from heterps_core.costmodels.common import REL_TOL
from heterps_core.instance import Instance

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class ResourceStages:
    """Upper-triangular [first, last] matrices for one resource; units 0 = no such stage.

    They are transposed views of the table's `[r, last, first]` arrays, so the column a DP
    reads (every first layer of stages ending at `last`) is contiguous in memory.
    """

    resource: str
    units: IntArray
    cost: FloatArray  # units * price; inf where units == 0
    throughput: FloatArray  # theta(units); 0 where units == 0


class StageTable:
    """All candidate stages of an instance, per resource.

    Computed once, packed: `units_packed[r, p]` (and `cost_packed`, `throughput_packed`) for
    p = `offset[last] + first`, so the stages ending at one layer (what a DP step reads) are
    one contiguous slice `[offset[last], offset[last] + last + 1)`. The dense views
    `cost_by_last[r, last, first]` and `by_resource[r].cost[first, last]` are built on
    first use (inf / 0 below the diagonal).
    """

    def __init__(self, instance: Instance, costs: ChainCosts | None = None) -> None:
        self.instance = instance
        self.costs = costs or ChainCosts(instance)
        self.n_layers = n = len(instance.layers)
        self.resources = instance.resource_names
        # Stages ordered by (last, first): the layout of one DP step.
        self._last, self._first = _by_last(n)
        self.offset = np.concatenate(([0], np.cumsum(np.arange(1, n + 1))))[:n]
        shape = (len(self.resources), len(self._last))
        self.units_packed = np.empty(shape, dtype=np.int64)
        self.cost_packed = np.empty(shape)
        self.throughput_packed = np.empty(shape)
        # What does not depend on the resource is computed once for all of them.
        first, last = self._first, self._last
        sync_mb = np.asarray(self.costs._sync_mb)
        self._sync_bytes = 2 * (sync_mb[last + 1] - sync_mb[first]) * 1e6
        fixed_p = np.asarray(self.costs._fixed_gb)
        sharded_p = np.asarray(self.costs._sharded_gb)
        self._fixed = fixed_p[last + 1] - fixed_p[first]
        self._sharded = sharded_p[last + 1] - sharded_p[first]
        self._k_mem: dict[float, IntArray] = {}  # units for memory, per memory size
        for r, name in enumerate(self.resources):
            self._stages_on(name, r)
        del self._sync_bytes, self._fixed, self._sharded, self._k_mem

    def without_slower_than(self, floor: float) -> StageTable:
        """A copy without the stages whose throughput is below `floor` samples/s: its plans
        are exactly this table's plans that run at `floor` or faster (a plan runs at its
        slowest stage's rate)."""
        table = copy.copy(self)
        for name in ("units_by_last", "cost_by_last", "throughput_by_last", "by_resource"):
            table.__dict__.pop(name, None)
        slow = self.throughput_packed < floor
        table.units_packed = np.where(slow, 0, self.units_packed)
        table.cost_packed = np.where(slow, np.inf, self.cost_packed)
        table.throughput_packed = np.where(slow, 0.0, self.throughput_packed)
        return table

    def stage(self, resource: int, first: int, last: int) -> tuple[int, float, float]:
        """(units, cost, throughput) of stage first..last on resource index `resource`."""
        p = int(self.offset[last]) + first
        return (
            int(self.units_packed[resource, p]),
            float(self.cost_packed[resource, p]),
            float(self.throughput_packed[resource, p]),
        )

    def ending_at(self, last: int) -> slice:
        """The packed columns of the stages that end at layer `last` (first = 0..last)."""
        start = int(self.offset[last])
        return slice(start, start + last + 1)

    @cached_property
    def units_by_last(self) -> IntArray:
        return self._dense(self.units_packed, 0)

    @cached_property
    def cost_by_last(self) -> FloatArray:
        return self._dense(self.cost_packed, np.inf)

    @cached_property
    def throughput_by_last(self) -> FloatArray:
        return self._dense(self.throughput_packed, 0.0)

    @cached_property
    def by_resource(self) -> list[ResourceStages]:
        return [
            ResourceStages(
                resource=name,
                units=self.units_by_last[r].T,
                cost=self.cost_by_last[r].T,
                throughput=self.throughput_by_last[r].T,
            )
            for r, name in enumerate(self.resources)
        ]

    def _dense(self, packed: np.ndarray, fill: float) -> np.ndarray:
        n = self.n_layers
        out = np.full((len(self.resources), n, n), fill, dtype=packed.dtype)
        out[:, self._last, self._first] = packed
        return out

    def _stages_on(self, resource: str, r: int) -> None:
        inst, costs, n = self.instance, self.costs, self.n_layers
        res = inst.resource(resource)
        bw = res.bandwidth_bytes_per_s
        first, last = self._first, self._last

        missing = np.asarray(costs._missing[resource])
        runs = missing[last + 1] - missing[first] == 0

        out_mb = np.array([layer.output_mb for layer in inst.layers])
        t_in = np.empty(n)
        t_in[0] = inst.input_mb * 1e6 / bw
        t_in[1:] = 2 * out_mb[:-1] * 1e6 / bw
        t_out = np.empty(n)
        t_out[:-1] = 2 * out_mb[:-1] * 1e6 / bw
        t_out[-1] = 0.0

        compute = np.asarray(costs._compute[resource])
        base = (compute[last + 1] - compute[first]) + t_in[first] + t_out[last]
        sync = self._sync_bytes / bw  # = 2 * sync_mb * 1e6 / bw, in the scalar code's order
        if res.memory_gb not in self._k_mem:
            self._k_mem[res.memory_gb] = _units_for_memory(
                self._fixed, self._sharded, res.memory_gb
            )
        k_mem = self._k_mem[res.memory_gb]
        k_thr = _units_for_throughput(base, sync, inst.batch_size, inst.throughput_target)
        units = np.maximum(k_mem, k_thr)
        ok = runs & (k_mem > 0) & (units <= res.count)
        units = np.where(ok, units, 0).astype(np.int64)
        safe_k = np.where(ok, units, 1).astype(np.float64)
        thr = safe_k * inst.batch_size / (base + (safe_k - 1) / safe_k * sync)
        self.units_packed[r] = units
        state_gb = self._fixed + self._sharded / safe_k
        self.cost_packed[r] = np.where(ok, market.unit_costs(res, safe_k, state_gb), np.inf)
        self.throughput_packed[r] = np.where(ok, thr, 0.0)


def _by_last(n: int) -> tuple[IntArray, IntArray]:
    """(last, first) of every stage, first <= last, ordered by last then first."""
    last, first = np.tril_indices(n)
    return last.astype(np.int64), first.astype(np.int64)


def _units_for_memory(fixed: FloatArray, sharded: FloatArray, memory_gb: float) -> IntArray:
    """Vector form of costmodel._units_for_memory; 0 where no unit count fits."""
    limit = memory_gb * (1 + REL_TOL)
    room = limit - fixed
    impossible = (room < 0) | ((room == 0) & (sharded > 0))
    k = np.ones(fixed.shape, dtype=np.int64)
    # Only stages holding shardable memory need more than one unit for it.
    idx = np.flatnonzero(~impossible & (sharded > 0))
    k[idx] = np.maximum(1, np.ceil(sharded[idx] / room[idx])).astype(np.int64)
    shard_idx = idx
    idx = idx[k[idx] > 1]
    while idx.size:
        down = fixed[idx] + sharded[idx] / (k[idx] - 1) <= limit
        idx = idx[down]
        k[idx] -= 1
        idx = idx[k[idx] > 1]
    idx = shard_idx
    while idx.size:
        up = fixed[idx] + sharded[idx] / k[idx] > limit
        idx = idx[up]
        k[idx] += 1
    k[impossible] = 0
    return k


def _units_for_throughput(
    base: FloatArray, sync: FloatArray, batch_size: int, target: float
) -> IntArray:
    """Vector form of costmodel._units_for_throughput (closed form, then exact steps)."""
    need = target * (1 - REL_TOL)
    qa, qb, qc = batch_size, -target * (base + sync), target * sync
    disc = np.maximum(0.0, qb * qb - 4 * qa * qc)
    k = np.maximum(1, np.ceil((-qb + np.sqrt(disc)) / (2 * qa))).astype(np.int64)

    def theta(units: IntArray, idx: IntArray) -> FloatArray:
        kf = units.astype(np.float64)
        return kf * batch_size / (base[idx] + (kf - 1) / kf * sync[idx])

    # The closed form is almost always exact; step only the cells where it is not.
    idx = np.flatnonzero(k > 1)
    while idx.size:
        down = theta(k[idx] - 1, idx) >= need
        idx = idx[down]
        k[idx] -= 1
        idx = idx[k[idx] > 1]
    idx = np.arange(k.size)
    while idx.size:
        up = theta(k[idx], idx) < need
        idx = idx[up]
        k[idx] += 1
    return k
