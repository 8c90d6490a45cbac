import numpy as np
import pytest

from heterps_core.generate import random_instance
from heterps_core.progress import Progress
from heterps_core.rl.policy import PolicyConfig
from heterps_core.rl.training import REWARDS, Problem, RLTrainConfig, pretrain, train_on_instance

SMALL = PolicyConfig(hidden=16, embed=8)


def test_finds_the_optimum_of_the_spec_example(tiny) -> None:
    from heterps_core.rl.policy import LayerPolicy

    seen: list[Progress] = []
    result = train_on_instance(
        tiny, RLTrainConfig(samples=16, max_updates=30, patience=None), seed=0,
        policy=LayerPolicy(SMALL), progress=seen.append,
    )
    assert result.problem.best_outcome.cost == pytest.approx(3.6)
    assert [tiny.resource_names[r] for r in result.problem.best] == ["cpu", "gpu", "gpu"]
    assert len(seen) == result.updates == 30
    assert {"update", "best_cost", "mean_reward", "entropy"} <= set(seen[-1].metrics)


@pytest.mark.slow
def test_policy_gradient_improves_the_sampled_plans(optimum) -> None:
    from heterps_core.rl.policy import LayerPolicy

    instance = random_instance(7, 8, 3)
    result = train_on_instance(
        instance, RLTrainConfig(samples=32, max_updates=60, lr=5e-3, patience=None), seed=1,
        policy=LayerPolicy(SMALL),
    )
    rewards = [row["mean_reward"] for row in result.history]
    assert np.mean(rewards[-10:]) > np.mean(rewards[:10])
    best = optimum(instance)
    assert result.problem.best_outcome.cost <= best.cost * 1.05


def test_same_seed_same_training(tiny) -> None:
    from heterps_core.rl.policy import LayerPolicy

    def run() -> list[float]:
        import torch

        torch.manual_seed(3)
        result = train_on_instance(
            tiny, RLTrainConfig(samples=8, max_updates=5, patience=None), seed=3,
            policy=LayerPolicy(SMALL),
        )
        return [row["mean_reward"] for row in result.history]

    assert run() == run()


def test_patience_stops_training_early(tiny) -> None:
    result = train_on_instance(
        tiny, RLTrainConfig(samples=8, max_updates=500, patience=5), seed=0
    )
    assert result.updates < 500


def test_pretrain_runs_across_instances() -> None:
    pool = [random_instance(s, 5, 2 + s % 3) for s in range(4)]
    seen: list[Progress] = []
    policy, history = pretrain(
        pool, updates=3, seed=0, config=RLTrainConfig(samples=8), instances_per_step=2,
        policy_config=SMALL, progress=seen.append,
    )
    assert len(history) == 3 and seen[-1].current == seen[-1].total == 3
    assert policy.config == SMALL


@pytest.mark.parametrize("reward", REWARDS)
def test_every_reward_trains_on_the_spec_example(tiny, reward) -> None:
    from heterps_core.rl.policy import LayerPolicy

    result = train_on_instance(
        tiny, RLTrainConfig(samples=16, max_updates=20, patience=None, reward=reward), seed=0,
        policy=LayerPolicy(SMALL),
    )
    assert result.problem.best_outcome.cost == pytest.approx(3.6)
    assert all(np.isfinite(row["mean_reward"]) for row in result.history)


def test_unknown_reward_is_a_clear_error(tiny) -> None:
    with pytest.raises(ValueError, match="reward must be one of"):
        train_on_instance(tiny, RLTrainConfig(samples=4, max_updates=1, reward="nope"))


def test_dynamic_mask_keeps_samples_of_a_capped_instance_feasible() -> None:
    """From random weights, the static mask alone samples mostly infeasible plans on a capped
    chain; the dynamic mask makes them feasible (this is what gives the reward a signal)."""
    from heterps_core.rl.policy import LayerPolicy

    instance = random_instance(3, 24, 5, caps=True)
    feasible = {}
    for dynamic in (False, True):
        import torch

        torch.manual_seed(0)
        problem = Problem(instance, dynamic_mask=dynamic)
        rollout = LayerPolicy(SMALL).rollout(problem.encoded, 64,
                                             generator=torch.Generator().manual_seed(0))
        _, outcomes = problem.rewarder.batch(rollout.actions.numpy())
        feasible[dynamic] = sum(o.feasible for o in outcomes) / len(outcomes)
    assert feasible[True] >= 0.9 and feasible[True] > feasible[False]


def test_step_costs_of_a_feasible_sample_add_up_to_its_cost() -> None:
    import torch

    from heterps_core.rl.policy import LayerPolicy

    problem = Problem(random_instance(1, 16, 4))
    rollout = LayerPolicy(SMALL).rollout(problem.encoded, 16,
                                         generator=torch.Generator().manual_seed(1))
    _, outcomes = problem.rewarder.batch(rollout.actions.numpy())
    for costs, outcome in zip(rollout.step_cost, outcomes, strict=True):
        if outcome.feasible:
            assert costs.sum() == pytest.approx(outcome.cost, rel=1e-9)


def test_self_imitation_keeps_the_best_distinct_plans(tiny) -> None:
    from heterps_core.rl.policy import LayerPolicy

    result = train_on_instance(
        tiny, RLTrainConfig(samples=16, max_updates=10, patience=None), seed=0,
        policy=LayerPolicy(SMALL),
    )
    elite = result.problem.elite
    costs = [c for c, _ in elite]
    assert costs == sorted(costs) and costs[0] == pytest.approx(3.6)
    assert len({tuple(p) for _, p in elite}) == len(elite)


def test_pretrain_curriculum_draws_only_allowed_instances() -> None:
    pool = [random_instance(s, 4 + 4 * (s % 2), 3) for s in range(6)]
    seen_sizes: set[int] = set()
    problems = [Problem(i) for i in pool]
    original = problems[0].rewarder.batch

    def allowed(step: int) -> list[int]:
        return [i for i, p in enumerate(problems) if len(p.instance.layers) == 4]

    for p in problems:
        def spy(actions, p=p):
            seen_sizes.add(len(p.instance.layers))
            return original.__func__(p.rewarder, actions)
        p.rewarder.batch = spy  # type: ignore[method-assign]
    pretrain(pool, updates=3, config=RLTrainConfig(samples=4, self_imitation=0.0),
             instances_per_step=2, policy_config=SMALL, problems=problems, curriculum=allowed)
    assert seen_sizes == {4}
