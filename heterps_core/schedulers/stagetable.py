"""Every candidate stage (layers i..j on resource r) provisioned at once, with numpy.

The exact solver and the frontier price all L(L+1)/2 x R candidate stages; doing that one
`ChainCosts.provision` call at a time costs ~1 s for 64 layers. This module repeats the
cost model's arithmetic *operation for operation* on arrays (same prefix sums, same order of
additions, same tolerance rules), so a stage gets the very units `provision` would give it;
`tests/heterps_core/schedulers/test_stagetable.py` checks that on random instances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from heterps_core.costmodel import REL_TOL, ChainCosts
from heterps_core.instance import Instance

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class ResourceStages:
    """Upper-triangular [first, last] matrices for one resource; units 0 = no such stage."""

    resource: str
    units: IntArray
    cost: FloatArray  # units * price; inf where units == 0
    throughput: FloatArray  # theta(units); 0 where units == 0


class StageTable:
    """All candidate stages of an instance, per resource."""

    def __init__(self, instance: Instance, costs: ChainCosts | None = None) -> None:
        self.instance = instance
        self.costs = costs or ChainCosts(instance)
        self.n_layers = len(instance.layers)
        self.resources = instance.resource_names
        self.by_resource = [self._stages_on(r) for r in self.resources]

    def _stages_on(self, resource: str) -> ResourceStages:
        inst, costs, n = self.instance, self.costs, self.n_layers
        res = inst.resource(resource)
        bw = res.bandwidth_bytes_per_s
        first, last = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        upper = first <= last

        missing = np.asarray(costs._missing[resource])
        runs = upper & (missing[last + 1] - missing[first] == 0)

        out_mb = np.array([layer.output_mb for layer in inst.layers])
        t_in = np.empty(n)
        t_in[0] = inst.input_mb * 1e6 / bw
        t_in[1:] = 2 * out_mb[:-1] * 1e6 / bw
        t_out = np.empty(n)
        t_out[:-1] = 2 * out_mb[:-1] * 1e6 / bw
        t_out[-1] = 0.0

        compute = np.asarray(costs._compute[resource])
        base = (compute[last + 1] - compute[first]) + t_in[first] + t_out[last]
        sync_mb = np.asarray(costs._sync_mb)
        sync = 2 * (sync_mb[last + 1] - sync_mb[first]) * 1e6 / bw
        fixed_p = np.asarray(costs._fixed_gb)
        sharded_p = np.asarray(costs._sharded_gb)
        fixed = fixed_p[last + 1] - fixed_p[first]
        sharded = sharded_p[last + 1] - sharded_p[first]
        # Cells below the diagonal are not stages; neutral values keep the searches finite.
        base = np.where(upper, base, 1.0)
        sync = np.where(upper, sync, 0.0)
        fixed = np.where(upper, fixed, 0.0)
        sharded = np.where(upper, sharded, 0.0)

        k_mem = _units_for_memory(fixed, sharded, res.memory_gb)
        k_thr = _units_for_throughput(base, sync, inst.batch_size, inst.throughput_target)
        units = np.maximum(k_mem, k_thr)
        ok = runs & (k_mem > 0) & (units <= res.count)
        units = np.where(ok, units, 0).astype(np.int64)
        safe_k = np.where(ok, units, 1).astype(np.float64)
        thr = safe_k * inst.batch_size / (base + (safe_k - 1) / safe_k * sync)
        return ResourceStages(
            resource=resource,
            units=units,
            cost=np.where(ok, units * res.price_per_hour, np.inf),
            throughput=np.where(ok, thr, 0.0),
        )


def _units_for_memory(fixed: FloatArray, sharded: FloatArray, memory_gb: float) -> IntArray:
    """Vector form of costmodel._units_for_memory; 0 where no unit count fits."""
    limit = memory_gb * (1 + REL_TOL)
    room = limit - fixed
    impossible = (room < 0) | ((room == 0) & (sharded > 0))
    safe_room = np.where(room > 0, room, 1.0)
    k = np.maximum(1, np.ceil(sharded / safe_room)).astype(np.int64)
    k = np.where(sharded == 0, 1, k)
    k = np.where(impossible, 1, k)
    active = ~impossible & (sharded > 0)
    while True:
        down = active & (k > 1) & (fixed + sharded / np.maximum(k - 1, 1) <= limit)
        if not down.any():
            break
        k = np.where(down, k - 1, k)
    while True:
        up = active & (fixed + sharded / k > limit)
        if not up.any():
            break
        k = np.where(up, k + 1, k)
    return np.where(impossible, 0, k)


def _units_for_throughput(
    base: FloatArray, sync: FloatArray, batch_size: int, target: float
) -> IntArray:
    """Vector form of costmodel._units_for_throughput (closed form, then exact steps)."""
    need = target * (1 - REL_TOL)
    qa, qb, qc = batch_size, -target * (base + sync), target * sync
    disc = np.maximum(0.0, qb * qb - 4 * qa * qc)
    k = np.maximum(1, np.ceil((-qb + np.sqrt(disc)) / (2 * qa))).astype(np.int64)

    def theta(units: IntArray) -> FloatArray:
        kf = units.astype(np.float64)
        return kf * batch_size / (base + (kf - 1) / kf * sync)

    while True:
        prev = np.maximum(k - 1, 1)
        down = (k > 1) & (theta(prev) >= need)
        if not down.any():
            break
        k = np.where(down, k - 1, k)
    while True:
        up = theta(k) < need
        if not up.any():
            break
        k = np.where(up, k + 1, k)
    return k
