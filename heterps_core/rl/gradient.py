"""The policy-gradient loss of the layer policy, the one step of both training loops
(training.py: per instance, the paper's way, and across many instances, the pretrained
policy). No exact labels anywhere: every signal is the cost model's.

Each update samples `samples` whole plans for one instance (decoded under the dynamic mask of
`decoding.py`, so nearly all are feasible), prices them with the cost model and steps on

    - mean_t A_t log pi(a_t) - entropy_coef * H - self_imitation * mean log pi(elite) / L

(every term per layer, so the weights mean the same on a chain of 8 or of 128 layers)

`reward` picks A (the ablations in docs/benchmarks/rl.md measured all three):
- "togo" (default): per-step rewards are the cost increments (a feasible plan's increments sum
  to its cost), so A_t = cost-to-go from step t, minus its batch mean at step t, divided by the
  batch's std of total cost: a choice is blamed only for what it and later choices cost.
- "log": one terminal reward -log(cost / reference), batch-normalised (signal at any scale).
- "clipped": the original -min(cost / reference, 5), -6 when infeasible (no signal far away).
The self-imitation term raises the probability of the best `elite` plans the policy itself
has sampled so far on the instance. The best plan ever sampled (`Problem.best`) is the
planner's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from heterps_core.rl.fastcost import Outcome
from heterps_core.rl.policy import LayerPolicy
from heterps_core.rl.problem import Problem
from heterps_core.rl.reward import INFEASIBLE_PENALTY
from heterps_core.rl.settings import REWARDS, RLTrainConfig

_INFEASIBLE_RATIO = 20.0  # "log": an infeasible plan scores like one 20x the reference


@dataclass(frozen=True)
class UpdateStats:
    mean_reward: float
    entropy: float
    improved: bool


def policy_gradient_loss(
    policy: LayerPolicy,
    problem: Problem,
    config: RLTrainConfig,
    generator: torch.Generator,
    moving_baseline: bool = True,
) -> tuple[torch.Tensor, UpdateStats]:
    """The policy-gradient loss of one batch of sampled plans, and what the batch showed."""
    rollout = policy.rollout(problem.encoded, config.samples, generator=generator)
    actions = rollout.actions.numpy()
    rewards, outcomes = problem.rewarder.batch(actions)
    improved = False
    for row, outcome in zip(actions, outcomes, strict=True):
        improved |= problem.offer(row, outcome)
    mean = float(rewards.mean())
    reward = config.reward
    if reward == "togo" and not problem.costs.additive:
        reward = "log"  # v2: the cost is not the sum of the step increments
    if reward == "togo":
        advantage = _togo_advantage(rollout.step_cost, outcomes, problem.rewarder.reference)
        pg = -(advantage * rollout.step_log_prob).mean()
    else:
        if reward == "log":
            ref = problem.rewarder.reference
            terminal = np.array([
                -np.log(o.cost / ref) if o.cost is not None else -np.log(_INFEASIBLE_RATIO)
                for o in outcomes
            ])
        elif reward == "clipped":
            terminal = rewards
        else:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        baseline = _baseline(problem, config, float(terminal.mean()), moving_baseline)
        advantage_1 = torch.from_numpy((terminal - baseline) / (terminal.std() + 1e-6)).float()
        pg = -(advantage_1 * rollout.log_prob).mean() / problem.encoded.n_layers
    loss = pg - config.entropy_coef * rollout.entropy.mean()
    if config.self_imitation > 0 and problem.elite:
        elite = torch.tensor([p for _, p in problem.elite[: config.elite]], dtype=torch.long)
        forced = policy.rollout(problem.encoded, len(elite), forced=elite)
        loss = loss - config.self_imitation * forced.log_prob.mean() / problem.encoded.n_layers
    return loss, UpdateStats(mean, float(rollout.entropy.mean().detach()), improved)


def _togo_advantage(
    step_cost: np.ndarray, outcomes: Sequence[Outcome], reference: float
) -> torch.Tensor:
    """A_t = -(cost-to-go from t) + its batch mean at t, over the batch std of total cost.
    An infeasible plan that hit no dead end (caps the mask could not foresee) pays the
    penalty at its last step."""
    rewards = -step_cost / reference
    for row, outcome in enumerate(outcomes):
        if outcome.cost is None:
            rewards[row, -1] -= INFEASIBLE_PENALTY
    togo = np.flip(np.cumsum(np.flip(rewards, axis=1), axis=1), axis=1)
    centred = togo - togo.mean(axis=0, keepdims=True)
    return torch.from_numpy(centred / (togo[:, 0].std() + 1e-6)).float()


def _baseline(problem: Problem, config: RLTrainConfig, mean: float, moving: bool) -> float:
    if not moving:
        # Across instances each one is seen rarely; the batch's own mean is the baseline.
        return mean
    # Per-instance training: one instance, so a moving average of its rewards is a stable
    # baseline across updates.
    if problem.baseline is None:
        problem.baseline = mean
    baseline = problem.baseline
    problem.baseline = config.baseline_decay * baseline + (1 - config.baseline_decay) * mean
    return baseline
