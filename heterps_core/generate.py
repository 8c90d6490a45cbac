"""Seeded random planning instances that look like CTR models on a cloud price list.

Shape: embedding layers first (big shardable tables, fast on CPU, no dense gradients), then
dense layers (much faster on GPUs, with gradients to all-reduce). In about a third of the
instances with 8+ layers a second, smaller embedding block sits in the middle (a two-tower
model such as MATCHNET), which makes plans like cpu -> gpu -> cpu -> gpu worth considering
and lets availability caps couple non-adjacent stages.

The target is derived from a reference plan (sparse on CPU, dense on the best GPU), so it is
feasible by construction; counts are generous unless `caps=True`, which lowers the count of a
resource the uncapped optimum leans on until the caps change the optimum (when some
lowering keeps the instance feasible; otherwise the instance keeps its generous counts).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance, Layer, Resource


@dataclass(frozen=True)
class _Kind:
    name: str
    kind: str
    price: float
    memory_gb: float
    network_gbps: float
    speed: float  # dense speed-up over a T4-class GPU; CPUs are ~1/12 of it


_CPUS = (
    _Kind("cpu-std", "cpu", 0.40, 256, 25, 1 / 12),
    _Kind("cpu-highmem", "cpu", 0.90, 768, 50, 1 / 10),
)
_GPUS = (
    _Kind("gpu-t4", "gpu", 0.53, 16, 25, 1.0),
    _Kind("gpu-l4", "gpu", 0.80, 24, 50, 1.9),
    _Kind("gpu-a10", "gpu", 1.10, 24, 50, 2.3),
    _Kind("gpu-v100", "gpu", 2.48, 32, 25, 2.6),
    _Kind("gpu-a100", "gpu", 3.67, 80, 100, 5.5),
    _Kind("gpu-h100", "gpu", 6.98, 80, 200, 11.0),
)
MAX_RESOURCES = len(_CPUS) + len(_GPUS)


def random_instance(
    seed: int,
    n_layers: int,
    n_resources: int,
    caps: bool = False,
    target: float | None = None,
) -> Instance:
    """A reproducible instance: same arguments, same instance (resources 2..8, layers >= 1)."""
    if not 1 <= n_resources <= MAX_RESOURCES:
        raise ValueError(f"n_resources must be in 1..{MAX_RESOURCES}, got {n_resources}")
    if n_layers < 1:
        raise ValueError(f"n_layers must be at least 1, got {n_layers}")
    rng = random.Random(f"heterps-{seed}-{n_layers}-{n_resources}-{caps}")
    kinds = _pick_kinds(rng, n_resources)
    batch = rng.choice((512, 1000, 2048))
    layers = _layers(rng, n_layers, kinds, batch)
    resources = tuple(
        Resource(
            name=k.name,
            kind=k.kind,
            price_per_hour=round(k.price * rng.uniform(0.85, 1.15), 3),
            count=10**6,  # provisional: sized below from the reference plan
            memory_gb=k.memory_gb,
            network_gbps=k.network_gbps,
        )
        for k in kinds
    )
    instance = Instance(
        batch_size=batch,
        throughput_target=1.0,
        resources=resources,
        layers=layers,
        name=f"random-s{seed}-L{n_layers}-R{n_resources}" + ("-caps" if caps else ""),
        samples=float(rng.choice((1e8, 1e9, 5e9))),
        input_mb=round(batch * rng.uniform(0.5, 2.0) / 1000, 3),
    )
    reference = _reference_assignment(instance, kinds)
    if target is None:
        slowest = max(
            s.time_per_batch_s or 0.0
            for s in evaluate(instance.with_target(1.0), reference).stages
        )
        target = round(batch / slowest * rng.uniform(1.5, 6.0), 1)
    instance = instance.with_target(target)
    instance = _generous_counts(rng, instance, reference)
    if caps:
        instance = _binding_caps(rng, instance)
    # Round-trip through the validating loader: a generated instance is a valid file.
    return Instance.from_dict(instance.to_dict())


def _pick_kinds(rng: random.Random, n: int) -> list[_Kind]:
    cpus = [_CPUS[0]] + ([_CPUS[1]] if n >= 5 else [])
    if n == 1:
        return [rng.choice((_CPUS[0], *_GPUS))]
    gpus = rng.sample(_GPUS, n - len(cpus))
    gpus.sort(key=lambda k: k.price)
    return cpus + gpus


def _layers(rng: random.Random, n: int, kinds: list[_Kind], batch: int) -> tuple[Layer, ...]:
    n_emb = 1 if n < 3 else max(1, round(n * rng.uniform(0.1, 0.3)))
    tower = n >= 8 and n_emb + 2 < n - 1 and rng.random() < 1 / 3
    kinds_of = ["embedding"] * n_emb + ["dense"] * (n - n_emb)
    if tower:
        mid = rng.randrange(n_emb + 2, n - 1)
        block = max(1, n_emb // 2)
        for i in range(mid, min(n - 1, mid + block)):
            kinds_of[i] = "embedding"
    # Keep the total work, parameters and memory of a model roughly independent of how finely
    # it is cut into layers (a 256-layer chain is a finer cut, not a 10x bigger model).
    size = min(1.0, 24 / n)
    scale = size * batch / 1000
    layers = []
    for i, kind in enumerate(kinds_of):
        make = _embedding if kind == "embedding" else _dense
        layers.append(make(rng, i, kinds, scale, size))
    return tuple(layers)


def _embedding(
    rng: random.Random, i: int, kinds: list[_Kind], scale: float, size: float
) -> Layer:
    cpu_s = rng.uniform(0.004, 0.02) * scale
    compute = {}
    for k in kinds:
        if k.kind == "cpu":
            compute[k.name] = round(cpu_s * rng.uniform(0.8, 1.2), 6)
        elif rng.random() < 0.8:  # some GPU kinds lack the sparse kernels
            compute[k.name] = round(cpu_s * rng.uniform(0.5, 1.5) / k.speed**0.3, 6)
    return Layer(
        name=f"emb{i}",
        kind="embedding",
        compute_s=compute or {kinds[0].name: round(cpu_s, 6)},
        output_mb=round(rng.uniform(0.5, 8.0), 3),
        sync_mb=0.0,
        memory_gb=round(rng.uniform(4.0, 120.0) * size, 2),
        shardable=True,
    )


def _dense(rng: random.Random, i: int, kinds: list[_Kind], scale: float, size: float) -> Layer:
    t4_s = rng.uniform(0.001, 0.012) * scale
    compute = {
        k.name: max(1e-6, round(t4_s / k.speed * rng.uniform(0.8, 1.25), 6)) for k in kinds
    }
    return Layer(
        name=f"fc{i}",
        kind="dense",
        compute_s=compute,
        output_mb=round(rng.uniform(0.2, 8.0), 3),
        sync_mb=round(max(0.001, rng.uniform(0.3, 8.0) * size), 3),
        memory_gb=round(rng.uniform(0.05, 0.6) * size, 3),
        shardable=False,
    )


def _reference_assignment(instance: Instance, kinds: list[_Kind]) -> list[str]:
    """Sparse layers on the first CPU, dense ones on the fastest-per-dollar GPU that holds them."""
    names = instance.resource_names
    cpu = next((k.name for k in kinds if k.kind == "cpu"), names[0])
    gpus = [k for k in kinds if k.kind == "gpu"] or kinds
    dense_gb = sum(layer.memory_gb for layer in instance.layers if not layer.shardable)
    roomy = [k for k in gpus if k.memory_gb >= dense_gb] or [max(gpus, key=lambda k: k.memory_gb)]
    gpu = max(roomy, key=lambda k: k.speed / k.price).name
    out = []
    for layer in instance.layers:
        wanted = cpu if layer.is_sparse else gpu
        out.append(wanted if layer.runs_on(wanted) else next(iter(layer.compute_s)))
    return out


def _generous_counts(
    rng: random.Random, instance: Instance, reference: list[str]
) -> Instance:
    """Counts like a cloud quota, raised where the reference plan needs more."""
    plan = evaluate(instance, reference)
    need: dict[str, int] = {}
    for stage in plan.stages:
        need[stage.resource] = need.get(stage.resource, 0) + (stage.units or 1)
    resources = []
    for res in instance.resources:
        quota = rng.choice((32, 64, 128)) if res.kind == "cpu" else rng.choice((8, 16, 32, 64))
        resources.append(_with_count(res, max(quota, 2 * need.get(res.name, 0) + 2)))
    return instance.replace(resources=tuple(resources))


def _binding_caps(rng: random.Random, instance: Instance) -> Instance:
    """Lower one resource's count below what the uncapped optimum uses, keeping a plan."""
    from heterps_core.schedulers.exact import exact_plan

    free = exact_plan(instance)
    if not free.feasible:
        return instance
    used: dict[str, int] = {}
    for stage in free.stages:
        used[stage.resource] = used.get(stage.resource, 0) + (stage.units or 0)
    spend = sorted(
        used, key=lambda r: -used[r] * instance.resource(r).price_per_hour
    )
    for name in spend:
        if used[name] < 2:
            continue
        for fraction in (rng.uniform(0.5, 0.9), 0.75, 0.9):
            count = max(1, min(used[name] - 1, int(used[name] * fraction)))
            capped = instance.replace(
                resources=tuple(
                    _with_count(r, count) if r.name == name else r for r in instance.resources
                )
            )
            if exact_plan(capped).feasible:
                return capped
    return instance


def _with_count(res: Resource, count: int) -> Resource:
    return Resource(
        name=res.name,
        kind=res.kind,
        price_per_hour=res.price_per_hour,
        count=count,
        memory_gb=res.memory_gb,
        network_gbps=res.network_gbps,
    )


def with_parameter_server(instance: Instance, row_s: float = 2e-8) -> Instance:
    """`instance` (v2) with sparse traffic on its shardable layers (half their output pulled,
    half pushed, 25,000 rows per MB of output) and a parameter-server role on its CPU types
    at `row_s` seconds per row: the generated server cases of the v2 tests and benchmarks."""
    data = instance.to_dict()
    for layer in data["layers"]:
        if layer["shardable"]:
            layer["sparse_pull_mb"] = layer["sparse_push_mb"] = layer["output_mb"] / 2
            layer["sparse_rows"] = layer["output_mb"] * 25_000
    cpus = [r["name"] for r in data["resources"] if r["kind"] == "cpu"]
    data["parameter_server"] = {"hosts": cpus, "row_s": {c: row_s for c in cpus}}
    return Instance.from_dict(data)


# Extra resource types beyond the 8 kinds above: the same hardware in another region or
# price tier (a few percent apart in price and speed), as a real multi-cloud price list has.
MAX_STRESS_RESOURCES = 2 * MAX_RESOURCES


def stress_instance(
    seed: int, n_layers: int, n_resources: int, caps: bool = True, scale: float = 20.0
) -> Instance:
    """A large-unit-count instance for the exact solver's stress grid (issue 18).

    The target and every count are `scale` x those of `random_instance`, so stages need tens
    to hundreds of units; with `caps`, the two resources the uncapped optimum spends most on
    get 60-85% of the units it uses (kept only where a quick plan still fits every cap), so
    the caps bind on large counts. Up to 16 resource types: types 9..16 are region/price-tier
    variants of the first eight. The caps are chosen without the exact solver, so generating
    stays fast however hard the instance is to solve.
    """
    from heterps_core.schedulers.chain_dp import uncapped_optimum
    from heterps_core.schedulers.exact_ilp import capped_upper_bound
    from heterps_core.schedulers.stagetable import StageTable

    if not 1 <= n_resources <= MAX_STRESS_RESOURCES:
        raise ValueError(f"n_resources must be in 1..{MAX_STRESS_RESOURCES}, got {n_resources}")
    base = random_instance(seed, n_layers, min(n_resources, MAX_RESOURCES))
    rng = random.Random(f"heterps-stress-{seed}-{n_layers}-{n_resources}-{caps}")
    inst = base.with_target(round(base.throughput_target * scale, 1))
    inst = inst.replace(
        resources=tuple(_with_count(r, int(r.count * scale)) for r in inst.resources)
    )
    if n_resources > MAX_RESOURCES:
        inst = _add_variants(rng, inst, n_resources - MAX_RESOURCES)
    inst = inst.replace(name=f"stress-s{seed}-L{n_layers}-R{n_resources}" + (
        "-caps" if caps else ""))
    if not caps:
        return Instance.from_dict(inst.to_dict())
    table = StageTable(inst)
    runs = uncapped_optimum(table)
    if runs is None:
        return Instance.from_dict(inst.to_dict())
    used: dict[str, float] = {}
    for first, last, res in runs:
        used[res] = used.get(res, 0) + table.stage(table.resources.index(res), first, last)[0]
    spend = sorted(used, key=lambda r: -used[r] * inst.resource(r).price_per_hour)
    capped = 0
    for name in spend:
        if capped == 2 or used[name] < 4:
            continue
        count = max(1, int(used[name] * rng.uniform(0.6, 0.85)))
        trial = inst.replace(resources=tuple(
            _with_count(r, count) if r.name == name else r for r in inst.resources))
        if np.isfinite(capped_upper_bound(StageTable(trial))):
            inst, capped = trial, capped + 1
    return Instance.from_dict(inst.to_dict())


def _add_variants(rng: random.Random, inst: Instance, extra: int) -> Instance:
    resources = list(inst.resources)
    originals = list(inst.resources)
    speed: dict[str, tuple[str, float]] = {}
    for k in range(extra):
        src = originals[k % len(originals)]
        name = f"{src.name}-b{k // len(originals) + 1}"
        factor = rng.uniform(0.9, 1.1)
        speed[name] = (src.name, factor)
        resources.append(Resource(
            name=name, kind=src.kind,
            price_per_hour=round(src.price_per_hour * rng.uniform(0.85, 1.2), 3),
            count=max(1, int(src.count * rng.uniform(0.5, 1.5))),
            memory_gb=src.memory_gb, network_gbps=src.network_gbps,
        ))
    layers = []
    for layer in inst.layers:
        compute = dict(layer.compute_s)
        for name, (src_name, factor) in speed.items():
            if src_name in layer.compute_s:
                compute[name] = max(1e-6, round(layer.compute_s[src_name] * factor, 6))
        layers.append(replace(layer, compute_s=compute))
    return inst.replace(resources=tuple(resources), layers=tuple(layers))
