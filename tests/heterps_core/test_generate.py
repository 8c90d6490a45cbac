"""The random instance families: reproducible, valid, realistic, caps that bind."""

from __future__ import annotations

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.generate import random_instance
from heterps_core.instance import Instance
from heterps_core.schedulers.chain_dp import uncapped_optimum
from heterps_core.schedulers.exact import exact_plan
from heterps_core.schedulers.stagetable import StageTable


def test_same_arguments_same_instance() -> None:
    assert random_instance(7, 20, 5).to_dict() == random_instance(7, 20, 5).to_dict()
    assert random_instance(7, 20, 5).to_dict() != random_instance(8, 20, 5).to_dict()


@pytest.mark.parametrize(("n_layers", "n_resources"), [(1, 2), (8, 2), (32, 6), (256, 8)])
def test_shape_and_validity(n_layers: int, n_resources: int) -> None:
    inst = random_instance(3, n_layers, n_resources)
    assert Instance.from_dict(inst.to_dict()) == inst  # passes the validating loader
    assert len(inst.layers) == n_layers and len(inst.resources) == n_resources
    assert inst.layers[0].kind == "embedding"  # embeddings first
    kinds = {r.kind for r in inst.resources}
    assert kinds == {"cpu", "gpu"}
    cpu = next(r.name for r in inst.resources if r.kind == "cpu")
    for layer in inst.layers:
        if layer.kind == "embedding":
            assert layer.shardable and layer.sync_mb == 0 and layer.runs_on(cpu)
        else:
            assert not layer.shardable and layer.sync_mb > 0
            gpu_best = min(t for r, t in layer.compute_s.items() if r != cpu and
                           inst.resource(r).kind == "gpu")
            assert gpu_best * 3 < layer.compute_s[cpu]  # GPUs are much faster on dense


def test_target_is_feasible_by_construction() -> None:
    feasible = sum(exact_plan(random_instance(s, 12, 4)).feasible for s in range(30))
    assert feasible == 30


def test_explicit_target_is_kept() -> None:
    assert random_instance(1, 10, 3, target=12345.0).throughput_target == 12345.0


def test_caps_bind_on_the_optimum() -> None:
    binding = 0
    for seed in range(20):
        capped = random_instance(seed, 10, 3, caps=True)
        plan = exact_plan(capped)
        assert plan.feasible
        relaxed = capped.replace(
            resources=tuple(
                type(r)(r.name, r.kind, r.price_per_hour, 10_000, r.memory_gb, r.network_gbps)
                for r in capped.resources
            )
        )
        free = exact_plan(relaxed)
        assert free.cost_per_hour is not None and plan.cost_per_hour is not None
        binding += plan.cost_per_hour > free.cost_per_hour * (1 + 1e-9)
    assert binding >= 15


def test_some_caps_bind_across_non_adjacent_stages() -> None:
    # The relaxed DP overruns a cap with two stages on one resource: only the capacity DP
    # (or the ILP) can answer these.
    coupled = 0
    for seed in range(30):
        inst = random_instance(seed, 10, 3, caps=True)
        table = StageTable(inst)
        runs = uncapped_optimum(table)
        assert runs is not None
        assignment = [r for first, last, r in runs for _ in range(first, last + 1)]
        coupled += not evaluate(inst, assignment).feasible
    assert coupled >= 5


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_resources"):
        random_instance(0, 5, 9)
    with pytest.raises(ValueError, match="n_layers"):
        random_instance(0, 0, 3)
