import pytest

from heterps_core import schedulers
from heterps_core.generate import random_instance
from heterps_core.rl.fastcost import AssignmentCosts
from heterps_core.rl.planner import _with_fallback, plan_with_rl
from heterps_core.rl.training import Problem


def test_registered_as_rl_and_plans_the_spec_example(tiny) -> None:
    plan = schedulers.create("rl", seed=0, updates=30).plan(tiny)
    assert plan.scheduler == "rl" and plan.feasible
    assert plan.cost_per_hour == pytest.approx(3.6)
    assert any("policy gradient on this instance" in note for note in plan.notes)
    assert plan.notes[0].startswith("produced by: policy samples")
    assert plan.solve_time_s > 0


def test_pretrained_zero_shot_is_fast_and_never_worse_than_homogeneous(optimum) -> None:
    for seed in range(3):
        instance = random_instance(seed, 7, 3)
        result = plan_with_rl(instance, seed=seed, pretrained=True)
        plan = result.final
        homogeneous = AssignmentCosts(instance).homogeneous()
        assert plan.feasible
        assert plan.cost_per_hour <= homogeneous[1].cost * (1 + 1e-9)
        assert plan.cost_per_hour >= optimum(instance).cost * (1 - 1e-9)
        assert result.greedy is not None and result.policy_best is not None
        assert any("zero-shot" in note for note in plan.notes)


def test_falls_back_to_the_homogeneous_plan_and_says_so(tiny) -> None:
    problem = Problem(tiny)
    bad = [1, 1, 1]  # all on gpu: 12 $/h, worse than all-cpu at 4.2 $/h
    notes: list[str] = []
    plan = _with_fallback(problem, bad, problem.costs.outcome(bad), notes)
    assert plan.assignment == ("cpu", "cpu", "cpu")
    assert plan.cost_per_hour == pytest.approx(4.2)
    assert any("fell back to the best homogeneous plan" in n for n in plan.notes)


def test_infeasible_instance_gets_an_infeasible_plan_with_a_reason(infeasible) -> None:
    plan = schedulers.create("rl", seed=0, budget_s=1).plan(infeasible)
    assert not plan.feasible
    assert "no feasible plan" in plan.reason


def test_pure_rl_option_skips_the_search(tiny) -> None:
    result = plan_with_rl(tiny, seed=0, updates=30, use_search=False)
    assert result.polished is None
    assert result.final.cost_per_hour == pytest.approx(3.6)


def test_respects_availability_caps(capped) -> None:
    plan = schedulers.create("rl", seed=0, updates=40).plan(capped)
    assert plan.feasible
    assert plan.cost_per_hour == pytest.approx(19.376, rel=0.01)


def test_pretrained_with_updates_fine_tunes_first(tiny) -> None:
    result = plan_with_rl(tiny, seed=1, pretrained=True, updates=20)
    assert result.mode == "pretrained+finetune" and 0 < result.updates <= 20
    assert result.final.cost_per_hour == pytest.approx(3.6)
    assert any("fine-tuned" in note for note in result.final.notes)


def test_shipped_policy_is_small_and_loads() -> None:
    from heterps_core.rl.checkpoint import load_policy
    from heterps_core.rl.pretrained import PRETRAINED_PATH

    assert PRETRAINED_PATH.stat().st_size < 2_000_000
    _, meta = load_policy(PRETRAINED_PATH)
    assert meta["seed"] == 0 and meta["updates"] > 0
    assert meta["labels"].startswith("none") and meta["capped_instances"] > 0
    assert meta["layers"][1] >= 128


def test_policy_only_skips_search_and_fallback(tiny) -> None:
    from heterps_core.rl.planner import _policy_plan

    problem = Problem(tiny)
    bad = [1, 1, 1]  # 12 $/h; the fallback would return all-cpu at 4.2 $/h
    problem.offer(bad, problem.costs.outcome(bad))
    plan = _policy_plan(problem, [])
    assert plan.assignment == ("gpu", "gpu", "gpu") and plan.cost_per_hour == pytest.approx(12)


def test_policy_only_plan_notes_and_no_search(tiny) -> None:
    result = plan_with_rl(tiny, seed=0, budget_s=1, from_scratch=True, policy_only=True)
    assert result.polished is None
    assert result.final.notes[0].startswith("produced by: policy samples only")
    assert result.final.cost_per_hour == pytest.approx(result.policy_best.cost)


def test_fallback_is_named_in_produced_by(tiny) -> None:
    plan = schedulers.create("rl", seed=0, budget_s=1).plan(tiny)
    assert sum(n.startswith("produced by:") for n in plan.notes) == 1


def test_policy_only_infeasible_says_the_policy_sampled_nothing(infeasible) -> None:
    plan = schedulers.create("rl", seed=0, budget_s=1, policy_only=True).plan(infeasible)
    assert not plan.feasible and "sampled no feasible plan" in plan.reason
    assert plan.notes[0].startswith("produced by: nothing feasible")


def test_the_cpu_cap_stops_training_and_the_notes_say_so(tiny) -> None:
    # --budget-s is only a cap: it cuts a long run short, in CPU seconds, and says so
    result = plan_with_rl(tiny, seed=0, updates=20_000, budget_s=0.5, policy_only=True)
    assert 0 < result.updates < 20_000 and result.train_s >= 0.5
    assert any("stopped by the 0.5 CPU-s cap" in note for note in result.final.notes)


def test_the_local_search_counts_its_evaluations(capped) -> None:
    from heterps_core.rl.search import SearchBudget, iterated_polish

    costs = AssignmentCosts(capped)
    start = [0] * costs.n_layers
    budget = SearchBudget(evaluations=50)
    _, out, _ = iterated_polish(costs, Problem(capped).mask, start, costs.outcome(start), budget)
    # the first local search always reaches its local optimum; the kicks stop at 50
    assert budget.first_polish > 0 and 50 <= budget.used <= 50 + 1
    again = SearchBudget(evaluations=50)
    _, out2, _ = iterated_polish(costs, Problem(capped).mask, start, costs.outcome(start), again)
    assert (out2, again.used, again.first_polish) == (out, budget.used, budget.first_polish)


@pytest.mark.parametrize("caps", [False, True])
def test_pruned_pair_moves_give_the_same_local_search(caps: bool) -> None:
    # the pairs _PairBound skips cannot be better: same moves, same plan, fewer evaluations
    import random

    from heterps_core.rl.features import usable
    from heterps_core.rl.search import SearchBudget, polish

    fewer = 0
    for seed in range(6):
        for n, r in ((8, 3), (14, 4), (20, 6)):
            instance = random_instance(seed, n, r, caps=caps)
            costs, mask = AssignmentCosts(instance), usable(instance)
            rng = random.Random(seed)
            scattered = [rng.choice([k for k in range(r) if mask[i, k]]) for i in range(n)]
            one_run = [int(mask.all(axis=0).argmax())] * n  # pairs inside one run
            for start in (scattered, one_run):
                pruned, full = SearchBudget(), SearchBudget()
                got = polish(costs, mask, start, costs.outcome(start), pruned)
                want = polish(costs, mask, start, costs.outcome(start), full, prune_pairs=False)
                assert got == want
                fewer += pruned.used < full.used
    assert fewer > 0
