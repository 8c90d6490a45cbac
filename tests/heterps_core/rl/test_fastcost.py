import dataclasses

import numpy as np
import pytest
import torch

from heterps_core.costmodel import evaluate
from heterps_core.generate import random_instance, with_parameter_server
from heterps_core.rl.decoding import PartialPlans
from heterps_core.rl.fastcost import AssignmentCosts, stage_runs
from heterps_core.rl.features import usable


@pytest.mark.parametrize("seed", range(8))
def test_outcome_agrees_with_the_cost_model(seed: int) -> None:
    n_layers, n_resources = (10, 16, 24, 40)[seed % 4], 2 + seed % 5
    instance = random_instance(seed, n_layers, n_resources, caps=seed % 2 == 1)
    costs = AssignmentCosts(instance)
    rng = np.random.default_rng(seed)
    names = instance.resource_names
    seen_feasible = False
    for i in range(200):
        if i % 2:
            # Few stages, like the plans the policy samples: random ones are mostly infeasible.
            cuts = sorted(rng.choice(range(1, n_layers), size=2, replace=False).tolist())
            picks = rng.integers(0, n_resources, size=3).tolist()
            assignment = [picks[sum(t >= c for c in cuts)] for t in range(n_layers)]
        else:
            assignment = rng.integers(0, n_resources, size=n_layers).tolist()
        fast = costs.outcome(assignment)
        plan = evaluate(instance, [names[r] for r in assignment])
        assert fast.feasible == plan.feasible
        if plan.feasible:
            seen_feasible = True
            assert fast.cost == pytest.approx(plan.cost_per_hour, rel=1e-12)
            assert fast.throughput == pytest.approx(plan.throughput, rel=1e-12)
        else:
            assert fast.reason
    assert seen_feasible


def test_caps_are_enforced_across_stages(capped) -> None:
    costs = AssignmentCosts(capped)
    # gpu-a twice with cpu in between: each stage fits alone, together they may not.
    names = capped.resource_names
    assignment = [names.index(r) for r in
                  ["cpu", "gpu-a", "gpu-a", "gpu-b", "gpu-b", "gpu-b"]]
    assert costs.outcome(assignment).cost == pytest.approx(19.376)
    all_cpu = costs.outcome([0] * len(capped.layers))
    assert not all_cpu.feasible and "cpu" in (all_cpu.reason or "")


def _decode(instance, assignment, dynamic_mask=True):
    costs = AssignmentCosts(instance)
    plans = PartialPlans(costs, 1.0, usable(instance), 1, dynamic_mask)
    increments, masks = [], []
    for t, a in enumerate(assignment):
        _, feasible = plans.options(t)
        masks.append(plans.mask_for(feasible)[0].copy())
        increments.append(float(plans.advance(t, [a])[0]))
    return costs, increments, masks


def test_increments_add_up_to_the_plan_cost(tiny) -> None:
    for assignment in ([0, 1, 1], [1, 0, 1], [0, 0, 0]):
        costs, increments, masks = _decode(tiny, assignment)
        assert all(m[a] for m, a in zip(masks, assignment, strict=True))
        assert sum(increments) == pytest.approx(costs.outcome(assignment).cost)


@pytest.mark.parametrize("seed", range(3))
def test_increments_add_up_on_generated_instances(seed: int) -> None:
    instance = random_instance(seed, 12, 4)
    costs = AssignmentCosts(instance)
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(30):
        assignment = [int(rng.integers(0, 4))] * 6 + [int(rng.integers(0, 4))] * 6
        out = costs.outcome(assignment)
        _, increments, masks = _decode(instance, assignment)
        if out.feasible and all(m[a] for m, a in zip(masks, assignment, strict=True)):
            assert sum(increments) == pytest.approx(out.cost, rel=1e-9)
            checked += 1
    assert checked


def _with_count(instance, name, count):
    resources = tuple(
        dataclasses.replace(r, count=count) if r.name == name else r for r in instance.resources
    )
    return instance.replace(resources=resources)


@pytest.mark.parametrize(("count", "allowed"), [(5, False), (6, True)])
def test_dynamic_mask_hides_choices_that_break_the_caps(capped, count, allowed) -> None:
    instance = _with_count(capped, "gpu-a", count)
    names = instance.resource_names
    a, b = names.index("gpu-a"), names.index("gpu-b")
    plan = [a, a, a, b, a, a]  # gpu-a holds 5 units in layers 0-2, layer 4 needs 1 more
    costs = AssignmentCosts(instance)
    assert costs.stage(0, 2, a)[0] == 5 and costs.stage(4, 4, a)[0] == 1
    _, _, masks = _decode(instance, plan)
    assert masks[4][a] == allowed and masks[4][b]
    assert costs.outcome(plan).feasible == allowed
    # Without the dynamic mask only the static one applies.
    _, _, static = _decode(instance, plan, dynamic_mask=False)
    assert static[4][a]


def test_stage_runs() -> None:
    assert stage_runs([0, 0, 1, 0]) == [(0, 1, 0), (2, 2, 1), (3, 3, 0)]


def test_homogeneous_is_the_cheapest_single_resource(tiny) -> None:
    r, out = AssignmentCosts(tiny).homogeneous()
    assert tiny.resource_names[r] == "cpu" and out.cost == pytest.approx(4.2)


def _v2(instance, sync):
    if not hasattr(instance, "as_v2"):
        pytest.skip("cost model v2 is not in this tree")
    return instance.as_v2(sync=sync)


@pytest.mark.parametrize(("seed", "sync"), [(0, "async"), (1, "bsp")])
def test_outcome_agrees_with_the_cost_model_on_v2_instances(seed: int, sync: str) -> None:
    instance = _v2(random_instance(seed, 8, 3), sync)
    costs = AssignmentCosts(instance)
    assert not costs.additive
    rng = np.random.default_rng(seed)
    names = instance.resource_names
    for _ in range(8):
        cut = int(rng.integers(1, 8))
        a, b = rng.integers(0, 3, size=2).tolist()
        assignment = [a] * cut + [b] * (8 - cut)
        fast = costs.outcome(assignment)
        plan = evaluate(instance, [names[r] for r in assignment])
        assert fast.feasible == plan.feasible
        if plan.feasible:
            assert fast.cost == pytest.approx(plan.cost_per_hour, rel=1e-12)


@pytest.mark.slow
def test_training_on_a_v2_instance_uses_its_cost_model() -> None:
    from heterps_core.rl.policy import LayerPolicy, PolicyConfig
    from heterps_core.rl.training import RLTrainConfig, train_on_instance

    instance = _v2(random_instance(4, 5, 2), "async")
    config = RLTrainConfig(samples=16, max_updates=1, patience=None, self_imitation=0.0)
    torch.manual_seed(0)  # the policy's initial weights: 4 unseeded samples were all infeasible
    result = train_on_instance(instance, config,
                               policy=LayerPolicy(PolicyConfig(hidden=16, embed=8)))
    best = result.problem.best
    assert best is not None
    plan = evaluate(instance, [instance.resource_names[r] for r in best])
    assert plan.cost_per_hour == pytest.approx(result.problem.best_outcome.cost)


def _v2_with_server(seed: int, sync: str, micro: int):
    """A v2 instance with sparse traffic and a parameter-server role on its CPU types."""
    return with_parameter_server(random_instance(seed, 8, 3).as_v2(sync, micro))


@pytest.mark.parametrize(("seed", "sync", "micro"), [(0, "async", 1), (1, "bsp", 1),
                                                      (2, "bsp", 4), (3, "async", 2)])
@pytest.mark.parametrize("name", ["rl", "greedy", "genetic"])
def test_every_scheduler_plan_of_a_v2_instance_is_costmodel_v2s(
    name: str, seed: int, sync: str, micro: int
) -> None:
    """RL (its fast-cost path), greedy and genetic plan a v2 instance; the plan each returns
    has exactly the numbers costmodel_v2 gives its assignment, stage by stage and server."""
    from heterps_core.costmodels.v2.plans import evaluate_v2 as solve_v2
    from heterps_core.schedulers import create
    from heterps_core.schedulers.exact import exact_plan

    instance = _v2_with_server(seed, sync, micro)
    options = {"pretrained": True, "budget_s": 3.0} if name == "rl" else {"generations": 15}
    plan = create(name, seed=seed, **options).plan(instance)
    assert plan.feasible, plan.reason
    assert plan.cost_model == 2 and plan.sync == sync and plan.micro_batches == micro
    direct = solve_v2(instance, list(plan.assignment or ()), name)
    assert direct.feasible
    assert plan.cost_per_hour == direct.cost_per_hour
    assert plan.throughput == direct.throughput
    assert [(s.layers, s.resource, s.units, s.time_per_batch_s) for s in plan.stages] == [
        (s.layers, s.resource, s.units, s.time_per_batch_s) for s in direct.stages]
    assert plan.parameter_server == direct.parameter_server
    # the RL environment's fast path prices the same assignment the same way
    costs = AssignmentCosts(instance)
    index = [instance.resource_names.index(r) for r in plan.assignment or ()]
    fast = costs.outcome(index)
    assert fast.cost == plan.cost_per_hour and fast.throughput == plan.throughput
    best = exact_plan(instance)
    assert best.cost_per_hour is not None
    assert plan.cost_per_hour is not None
    assert plan.cost_per_hour >= best.cost_per_hour * (1 - 1e-9)
