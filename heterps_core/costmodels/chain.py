"""Prefix sums over the layer chain: any stage (layers i..j on resource r) in O(1), and the
spec's provisioning of one stage (§3-§4). Both cost models price stages from these sums."""

from __future__ import annotations

import math
from dataclasses import dataclass

from heterps_core.costmodels.common import REL_TOL, describe, prefix
from heterps_core.instance import Instance


@dataclass(frozen=True)
class StageShape:
    """What provisioning needs to know about layers i..j on one resource."""

    first: int
    last: int
    resource: str
    base_s: float  # compute + boundary traffic: the part of T(k) that does not depend on k
    sync_s: float  # 2 * sync bytes / bandwidth: A(k) = (k-1)/k * sync_s
    fixed_gb: float  # non-shardable memory on every unit
    sharded_gb: float  # shardable memory, split over the units

    def time_per_batch(self, units: int) -> float:
        return self.base_s + (units - 1) / units * self.sync_s

    def throughput(self, units: int, batch_size: int) -> float:
        return units * batch_size / self.time_per_batch(units)

    def memory_gb(self, units: int) -> float:
        return self.fixed_gb + self.sharded_gb / units


@dataclass(frozen=True)
class Provision:
    """The smallest unit count that meets target and memory, or why there is none."""

    units: int | None
    reason: str | None = None


class ChainCosts:
    """Prefix sums over the layer chain, per resource, for O(1) stage shapes."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        layers = instance.layers
        n = len(layers)
        self.n_layers = n
        self._compute: dict[str, list[float]] = {}
        self._missing: dict[str, list[int]] = {}
        for res in instance.resource_names:
            compute = [0.0]
            missing = [0]
            for layer in layers:
                seconds = layer.compute_s.get(res)
                compute.append(compute[-1] + (seconds or 0.0))
                missing.append(missing[-1] + (seconds is None))
            self._compute[res] = compute
            self._missing[res] = missing
        self._sync_mb = prefix([layer.sync_mb for layer in layers])
        self._fixed_gb = prefix([0.0 if lyr.shardable else lyr.memory_gb for lyr in layers])
        self._sharded_gb = prefix([lyr.memory_gb if lyr.shardable else 0.0 for lyr in layers])

    def runs_on(self, first: int, last: int, resource: str) -> bool:
        missing = self._missing[resource]
        return missing[last + 1] - missing[first] == 0

    def compute_s(self, first: int, last: int, resource: str) -> float:
        return self._compute[resource][last + 1] - self._compute[resource][first]

    def sync_mb(self, first: int, last: int) -> float:
        return self._sync_mb[last + 1] - self._sync_mb[first]

    def memory_split(self, first: int, last: int) -> tuple[float, float]:
        """(non-shardable GB per unit, shardable GB) of layers first..last."""
        return (self._fixed_gb[last + 1] - self._fixed_gb[first],
                self._sharded_gb[last + 1] - self._sharded_gb[first])

    def traffic_s(self, first: int, last: int, bw: float) -> tuple[float, float]:
        """Boundary traffic (in, out) of layers first..last at `bw` bytes/s (§3)."""
        inst = self.instance
        layers = inst.layers
        traffic_in = (
            inst.input_mb * 1e6 / bw if first == 0 else 2 * layers[first - 1].output_mb * 1e6 / bw
        )
        traffic_out = 0.0 if last == self.n_layers - 1 else 2 * layers[last].output_mb * 1e6 / bw
        return traffic_in, traffic_out

    def shape(self, first: int, last: int, resource: str) -> StageShape:
        """Layers first..last (inclusive) as one stage on `resource`; they must all run there."""
        bw = self.instance.resource(resource).bandwidth_bytes_per_s
        compute = self.compute_s(first, last, resource)
        traffic_in, traffic_out = self.traffic_s(first, last, bw)
        fixed, sharded = self.memory_split(first, last)
        return StageShape(
            first=first,
            last=last,
            resource=resource,
            base_s=compute + traffic_in + traffic_out,
            sync_s=2 * self.sync_mb(first, last) * 1e6 / bw,
            fixed_gb=fixed,
            sharded_gb=sharded,
        )

    def provision(self, shape: StageShape) -> Provision:
        """§4: the smallest k in 1..count with theta(k) >= R and M(k) <= memory."""
        inst = self.instance
        res = inst.resource(shape.resource)
        what = describe(inst, shape.first, shape.last)
        k_mem = _units_for_memory(shape, res.memory_gb)
        if k_mem is None:
            return Provision(
                None,
                f"{what} needs {shape.fixed_gb:g} GB of non-shardable memory per unit; "
                f"{res.name} has {res.memory_gb:g} GB",
            )
        k_thr = _units_for_throughput(shape, inst.batch_size, inst.throughput_target)
        units = max(k_mem, k_thr)
        if units > res.count:
            why = "to hold its memory" if k_mem >= k_thr else (
                f"to reach {inst.throughput_target:g} samples/s"
            )
            return Provision(
                None, f"{what} needs {units} units of {res.name} {why}, {res.count} exist"
            )
        return Provision(units)

    def cannot_run(self, first: int, last: int, resource: str) -> str:
        """The reason for a stage with a layer that has no figure on `resource`."""
        layers = self.instance.layers
        bad = next(i for i in range(first, last + 1) if not layers[i].runs_on(resource))
        return f"layer {layers[bad].name} cannot run on {resource}"


def _units_for_memory(shape: StageShape, memory_gb: float) -> int | None:
    room = memory_gb * (1 + REL_TOL) - shape.fixed_gb
    if room < 0 or (room == 0 and shape.sharded_gb > 0):
        return None
    if shape.sharded_gb == 0:
        return 1
    k = max(1, math.ceil(shape.sharded_gb / room))
    while k > 1 and shape.memory_gb(k - 1) <= memory_gb * (1 + REL_TOL):
        k -= 1
    while shape.memory_gb(k) > memory_gb * (1 + REL_TOL):
        k += 1
    return k


def _units_for_throughput(shape: StageShape, batch_size: int, target: float) -> int:
    # theta(k) = k B / (base + (k-1)/k sync) is increasing in k; solve k B >= R T(k) in closed
    # form (quadratic in k), then step to the exact smallest k under the tolerance.
    need = target * (1 - REL_TOL)
    b, base, sync = batch_size, shape.base_s, shape.sync_s
    # k^2 B - R (base + sync) k + R sync >= 0  ->  largest root
    qa, qb, qc = b, -target * (base + sync), target * sync
    disc = max(0.0, qb * qb - 4 * qa * qc)
    k = max(1, math.ceil((-qb + math.sqrt(disc)) / (2 * qa)))
    while k > 1 and shape.throughput(k - 1, batch_size) >= need:
        k -= 1
    while shape.throughput(k, batch_size) < need:
        k += 1
    return k
