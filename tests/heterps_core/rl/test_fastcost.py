import numpy as np
import pytest

from heterps_core.costmodel import evaluate
from heterps_core.generate import random_instance
from heterps_core.rl.fastcost import AssignmentCosts, Increments, stage_runs


@pytest.mark.parametrize("seed", range(4))
def test_outcome_agrees_with_the_cost_model(seed: int) -> None:
    instance = random_instance(seed, 10, 3, caps=seed % 2 == 1)
    costs = AssignmentCosts(instance)
    rng = np.random.default_rng(seed)
    names = instance.resource_names
    seen_feasible = False
    for _ in range(200):
        assignment = rng.integers(0, 3, size=10).tolist()
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


def test_increments_add_up_to_the_plan_cost(tiny) -> None:
    costs = AssignmentCosts(tiny)
    inc = Increments(costs, reference=1.0, n_slots=8)
    assignment = [0, 1, 1]
    starts, previous, total = [0], [-1], 0.0
    for t, a in enumerate(assignment):
        total += float(inc.at(t, starts, previous)[0, a, 0])
        starts = [starts[0] if previous[0] == a else t]
        previous = [a]
    assert total == pytest.approx(costs.outcome(assignment).cost)


def test_stage_runs() -> None:
    assert stage_runs([0, 0, 1, 0]) == [(0, 1, 0), (2, 2, 1), (3, 3, 0)]


def test_homogeneous_is_the_cheapest_single_resource(tiny) -> None:
    r, out = AssignmentCosts(tiny).homogeneous()
    assert tiny.resource_names[r] == "cpu" and out.cost == pytest.approx(4.2)
