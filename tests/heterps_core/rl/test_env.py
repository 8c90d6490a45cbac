import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from heterps_core.generate import random_instance
from heterps_core.rl.env import OBSERVATION_SIZE, PlanningEnv
from heterps_core.rl.reward import INFEASIBLE_PENALTY


def test_passes_gymnasiums_checker() -> None:
    check_env(PlanningEnv(random_instance(1, 6, 3)), skip_render_check=True)


def test_optimal_episode_on_tiny_is_rewarded_against_the_homogeneous_plan(tiny) -> None:
    env = PlanningEnv(tiny)
    obs, info = env.reset(seed=0)
    assert obs.shape == (OBSERVATION_SIZE,)
    assert info["action_mask"][:2].tolist() == [True, True]
    rewards = []
    for action in (0, 1, 1):  # cpu, gpu, gpu: the spec's optimum, 3.6 $/h
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    assert terminated and not truncated
    assert rewards[:2] == [0.0, 0.0]
    assert info["cost_per_hour"] == pytest.approx(3.6)
    assert rewards[2] == pytest.approx(-3.6 / 4.2)  # best homogeneous: all cpu, 4.2 $/h
    assert info["assignment"] == ["cpu", "gpu", "gpu"]


def test_observation_carries_the_previous_action(tiny) -> None:
    env = PlanningEnv(tiny)
    first, _ = env.reset(seed=0)
    second, *_ = env.step(1)
    assert first[-1] == 1.0  # "no previous action" slot
    assert second[-9 + 1] == 1.0 and second[-1] == 0.0


def test_masked_action_ends_the_episode_with_the_penalty_and_a_reason(tiny) -> None:
    env = PlanningEnv(tiny)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(5)  # padding slot: tiny has 2 resources
    assert terminated and reward == -INFEASIBLE_PENALTY
    assert "cannot use" in info["reason"]


def test_infeasible_plan_gets_the_penalty_and_the_cost_models_reason(infeasible) -> None:
    env = PlanningEnv(infeasible)
    env.reset(seed=0)
    done = False
    while not done:
        action = int(np.flatnonzero(env.action_masks())[0])
        _, reward, done, _, info = env.step(action)
    assert reward == -INFEASIBLE_PENALTY
    assert info["feasible"] is False and info["reason"]


def test_vectorised_with_gymnasium() -> None:
    instance = random_instance(2, 5, 2)
    envs = gym.vector.SyncVectorEnv([lambda: PlanningEnv(instance) for _ in range(3)])
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, OBSERVATION_SIZE)
    finished = np.zeros(3, dtype=bool)
    for _ in range(5):
        _, _, terminated, _, _ = envs.step(np.zeros(3, dtype=np.int64))
        finished |= terminated
    assert finished.all()
