import numpy as np
import pytest

from heterps_core.generate import random_instance
from heterps_core.progress import Progress
from heterps_core.rl.policy import PolicyConfig
from heterps_core.rl.training import TrainConfig, pretrain, train_on_instance

SMALL = PolicyConfig(hidden=16, embed=8)


def test_finds_the_optimum_of_the_spec_example(tiny) -> None:
    from heterps_core.rl.policy import LayerPolicy

    seen: list[Progress] = []
    result = train_on_instance(
        tiny, TrainConfig(samples=16, max_updates=30, patience=None), seed=0,
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
        instance, TrainConfig(samples=32, max_updates=60, lr=5e-3, patience=None), seed=1,
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
            tiny, TrainConfig(samples=8, max_updates=5, patience=None), seed=3,
            policy=LayerPolicy(SMALL),
        )
        return [row["mean_reward"] for row in result.history]

    assert run() == run()


def test_patience_stops_training_early(tiny) -> None:
    result = train_on_instance(
        tiny, TrainConfig(samples=8, max_updates=500, patience=5), seed=0
    )
    assert result.updates < 500


def test_pretrain_runs_across_instances() -> None:
    pool = [random_instance(s, 5, 2 + s % 3) for s in range(4)]
    seen: list[Progress] = []
    policy, history = pretrain(
        pool, updates=3, seed=0, config=TrainConfig(samples=8), instances_per_step=2,
        policy_config=SMALL, progress=seen.append,
    )
    assert len(history) == 3 and seen[-1].current == seen[-1].total == 3
    assert policy.config == SMALL
