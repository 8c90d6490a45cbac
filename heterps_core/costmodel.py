"""The cost model of the spec (§2-§4): stages, time per batch, memory, provisioning, objective.

Every scheduler is judged by `evaluate`. `ChainCosts` holds prefix sums so that any stage
(layers i..j on resource r) is priced in O(log count); the exact solver and the RL
environment use it, and `evaluate` goes through the very same code, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance
from heterps_core.plan import Plan, Stage

REL_TOL = 1e-9


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
        self._sync_mb = _prefix([layer.sync_mb for layer in layers])
        self._fixed_gb = _prefix([0.0 if lyr.shardable else lyr.memory_gb for lyr in layers])
        self._sharded_gb = _prefix([lyr.memory_gb if lyr.shardable else 0.0 for lyr in layers])

    def runs_on(self, first: int, last: int, resource: str) -> bool:
        missing = self._missing[resource]
        return missing[last + 1] - missing[first] == 0

    def shape(self, first: int, last: int, resource: str) -> StageShape:
        """Layers first..last (inclusive) as one stage on `resource`; they must all run there."""
        inst = self.instance
        res = inst.resource(resource)
        bw = res.bandwidth_bytes_per_s
        layers = inst.layers
        compute = self._compute[resource][last + 1] - self._compute[resource][first]
        traffic_in = (
            inst.input_mb * 1e6 / bw if first == 0 else 2 * layers[first - 1].output_mb * 1e6 / bw
        )
        traffic_out = 0.0 if last == self.n_layers - 1 else 2 * layers[last].output_mb * 1e6 / bw
        sync_mb = self._sync_mb[last + 1] - self._sync_mb[first]
        return StageShape(
            first=first,
            last=last,
            resource=resource,
            base_s=compute + traffic_in + traffic_out,
            sync_s=2 * sync_mb * 1e6 / bw,
            fixed_gb=self._fixed_gb[last + 1] - self._fixed_gb[first],
            sharded_gb=self._sharded_gb[last + 1] - self._sharded_gb[first],
        )

    def provision(self, shape: StageShape) -> Provision:
        """§4: the smallest k in 1..count with theta(k) >= R and M(k) <= memory."""
        inst = self.instance
        res = inst.resource(shape.resource)
        what = _describe(inst, shape)
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


def stages_of(assignment: Sequence[str]) -> list[tuple[int, int, str]]:
    """§2: maximal runs of equal resources as (first, last, resource), in order."""
    runs: list[tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(assignment) + 1):
        if i == len(assignment) or assignment[i] != assignment[start]:
            runs.append((start, i - 1, assignment[start]))
            start = i
    return runs


def evaluate(
    instance: Instance,
    assignment: Sequence[str],
    scheduler: str = "evaluate",
    costs: ChainCosts | None = None,
) -> Plan:
    """The cost model on one assignment: a feasible plan, or an infeasible one with its reason."""
    if instance.is_v2:
        from heterps_core.costmodel_v2 import solve_v2

        return solve_v2(instance, assignment, scheduler)
    check_assignment(instance, assignment)
    costs = costs or ChainCosts(instance)
    stages: list[Stage] = []
    reasons: list[str] = []
    used: dict[str, int] = {}
    for first, last, res in stages_of(assignment):
        layers = tuple(range(first, last + 1))
        if not costs.runs_on(first, last, res):
            bad = next(i for i in layers if not instance.layers[i].runs_on(res))
            reasons.append(f"layer {instance.layers[bad].name} cannot run on {res}")
            stages.append(Stage(layers, res, None, None, None))
            continue
        shape = costs.shape(first, last, res)
        prov = costs.provision(shape)
        if prov.units is None:
            reasons.append(prov.reason or "cannot be provisioned")
            stages.append(Stage(layers, res, None, None, None))
            continue
        used[res] = used.get(res, 0) + prov.units
        stages.append(
            Stage(
                layers,
                res,
                prov.units,
                shape.time_per_batch(prov.units),
                shape.throughput(prov.units, instance.batch_size),
            )
        )
    for res, units in used.items():
        count = instance.resource(res).count
        if units > count:
            reasons.append(f"stages on {res} need {units} units in total, {count} exist")
    if reasons:
        return Plan(
            scheduler=scheduler,
            feasible=False,
            assignment=tuple(assignment),
            stages=tuple(stages),
            reason="; ".join(reasons),
        )
    return feasible_plan(instance, tuple(assignment), tuple(stages), scheduler)


def feasible_plan(
    instance: Instance, assignment: tuple[str, ...], stages: tuple[Stage, ...], scheduler: str
) -> Plan:
    """Totals (§4) for stages that are all provisioned."""
    cost = sum((s.units or 0) * instance.resource(s.resource).price_per_hour for s in stages)
    throughput = min(s.throughput or 0.0 for s in stages)
    hours = total = None
    if instance.samples is not None:
        hours = instance.samples / throughput / 3600
        total = cost * hours
    return Plan(
        scheduler=scheduler,
        feasible=True,
        assignment=assignment,
        stages=stages,
        throughput=throughput,
        cost_per_hour=cost,
        hours=hours,
        total_cost=total,
    )


def infeasible_plan(scheduler: str, reason: str, assignment: Sequence[str] | None = None) -> Plan:
    return Plan(
        scheduler=scheduler,
        feasible=False,
        assignment=tuple(assignment) if assignment is not None else None,
        reason=reason,
    )


def is_better(candidate: Plan, incumbent: Plan | None) -> bool:
    """§4 objective: feasible beats infeasible; lower cost; on equal cost, higher throughput."""
    if not candidate.feasible:
        return False
    if incumbent is None or not incumbent.feasible:
        return True
    assert candidate.cost_per_hour is not None and incumbent.cost_per_hour is not None
    if not costs_equal(candidate.cost_per_hour, incumbent.cost_per_hour):
        return candidate.cost_per_hour < incumbent.cost_per_hour
    return (candidate.throughput or 0.0) > (incumbent.throughput or 0.0) * (1 + REL_TOL)


def costs_equal(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def check_assignment(instance: Instance, assignment: Sequence[str]) -> None:
    if len(assignment) != len(instance.layers):
        raise InstanceError(
            "assignment",
            f"has {len(assignment)} entries, the instance has {len(instance.layers)} layers",
        )
    names = set(instance.resource_names)
    for i, res in enumerate(assignment):
        if res not in names:
            raise InstanceError(f"assignment[{i}]", f"{res!r} names no resource")


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


def _describe(instance: Instance, shape: StageShape) -> str:
    names = instance.layers
    if shape.first == shape.last:
        return f"layer {names[shape.first].name}"
    return f"stage {names[shape.first].name}..{names[shape.last].name}"


def _prefix(values: Sequence[float]) -> list[float]:
    out = [0.0]
    for v in values:
        out.append(out[-1] + v)
    return out
