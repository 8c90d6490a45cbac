"""Training the layer policy: on one instance for its plan (`train_on_instance`, the
paper's way) and across many instances (`pretrain`, the pretrained policy). Each update is
one step on the policy-gradient loss of gradient.py; the settings are `RLTrainConfig`
(settings.py), one instance's state a `Problem` (problem.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from heterps_core.budget import Deadline, Stopwatch, passed
from heterps_core.instance import Instance
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.rl.gradient import policy_gradient_loss
from heterps_core.rl.policy import LayerPolicy, PolicyConfig, one_thread
from heterps_core.rl.problem import Problem
from heterps_core.rl.settings import REWARDS, RLTrainConfig

# Callers outside the core (the web app, benches, tests) take the settings and the problem
# from here with the loops.
__all__ = ["REWARDS", "InstanceTraining", "Problem", "RLTrainConfig", "pretrain",
           "train_on_instance"]


@dataclass
class InstanceTraining:
    """What per-instance training found; `history` has one row per update."""

    problem: Problem
    updates: int
    seconds: float  # wall seconds, what the user waited
    history: list[dict[str, float]] = field(default_factory=list)
    cpu_s: float = 0.0  # CPU seconds of the same training (what a budget counts)
    capped: bool = False  # True when the CPU cap, not the updates or patience, ended it


def train_on_instance(
    instance: Instance,
    config: RLTrainConfig,
    seed: int = 0,
    policy: LayerPolicy | None = None,
    problem: Problem | None = None,
    progress: ProgressCallback = no_progress,
) -> InstanceTraining:
    """Train `policy` (a fresh one when None) on one instance for `config.max_updates`
    updates, fewer when `patience` updates in a row find nothing better or the optional CPU
    cap `budget_s` is spent. The problem's best plan is the answer; pass `problem` to
    continue from plans already seen."""
    with one_thread():
        return _train_on_instance(instance, config, seed, policy, problem, progress)


def _train_on_instance(
    instance: Instance,
    config: RLTrainConfig,
    seed: int,
    policy: LayerPolicy | None,
    problem: Problem | None,
    progress: ProgressCallback,
) -> InstanceTraining:
    torch.manual_seed(seed)
    policy = policy or LayerPolicy(PolicyConfig())
    policy.train()
    problem = problem or Problem(instance, config.dynamic_mask)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    watch = Stopwatch()
    deadline = Deadline.after(config.budget_s)
    history: list[dict[str, float]] = []
    since_best = 0
    update = 0
    capped = False
    while update < config.max_updates:
        if passed(deadline):
            capped = True
            break
        loss, stats = policy_gradient_loss(policy, problem, config, generator)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip)
        optimizer.step()
        update += 1
        since_best = 0 if stats.improved else since_best + 1
        best_cost = problem.best_outcome.cost if problem.best_outcome else None
        row = {
            "update": update,
            "best_cost": best_cost if best_cost is not None else float("nan"),
            "mean_reward": stats.mean_reward,
            "entropy": stats.entropy,
        }
        history.append(row)
        progress(Progress(update, config.max_updates, "training the RL policy", row))
        if config.patience is not None and since_best >= config.patience:
            break
    return InstanceTraining(problem, update, watch.wall_s, history, watch.cpu_s, capped)


def pretrain(
    instances: Sequence[Instance],
    updates: int,
    seed: int = 0,
    config: RLTrainConfig | None = None,
    instances_per_step: int = 4,
    policy_config: PolicyConfig | None = None,
    progress: ProgressCallback = no_progress,
    policy: LayerPolicy | None = None,
    problems: Sequence[Problem] | None = None,
    curriculum: Callable[[int], list[int]] | None = None,
    checkpoint: Callable[[LayerPolicy, int], None] | None = None,
    budget_s: float | None = None,
    stop_after: int | None = None,
) -> tuple[LayerPolicy, list[dict[str, float]]]:
    """Train one policy (a fresh one, or `policy`) across `instances` for `updates` optimizer
    steps; each step averages the policy gradient of `instances_per_step` instances drawn in a
    seeded order (from `curriculum(step)`'s indices when given). Pass `problems` (built from
    `instances`) to reuse prepared ones; `checkpoint(policy, step)` runs every 100 steps.
    `stop_after` ends training after that many steps of the `updates`-step schedule (the
    learning rate still decays as if all `updates` were run); `budget_s` caps it in CPU
    seconds (budget.py)."""
    config = config or RLTrainConfig()
    with one_thread():
        torch.manual_seed(seed)
        return _pretrain(
            list(problems) if problems is not None
            else [Problem(i, config.dynamic_mask) for i in instances],
            updates, seed, config, instances_per_step,
            policy or LayerPolicy(policy_config or PolicyConfig()), progress,
            curriculum, checkpoint, budget_s, stop_after,
        )


def _pretrain(
    problems: list[Problem],
    updates: int,
    seed: int,
    config: RLTrainConfig,
    instances_per_step: int,
    policy: LayerPolicy,
    progress: ProgressCallback,
    curriculum: Callable[[int], list[int]] | None,
    checkpoint: Callable[[LayerPolicy, int], None] | None,
    budget_s: float | None,
    stop_after: int | None,
) -> tuple[LayerPolicy, list[dict[str, float]]]:
    policy.train()
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, updates))
    history: list[dict[str, float]] = []
    deadline = Deadline.after(budget_s)
    last = updates if stop_after is None else min(updates, stop_after)
    for step in range(1, last + 1):
        if passed(deadline):
            break
        optimizer.zero_grad()
        rewards, entropies = [], []
        eligible = curriculum(step) if curriculum is not None else list(range(len(problems)))
        if not eligible:
            eligible = list(range(len(problems)))
        per_step = min(instances_per_step, len(eligible))
        drawn = rng.choice(eligible, size=per_step, replace=False)
        for index in drawn:
            loss, stats = policy_gradient_loss(
                policy, problems[int(index)], config, generator, moving_baseline=False
            )
            (loss / per_step).backward()
            rewards.append(stats.mean_reward)
            entropies.append(stats.entropy)
        torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        row = {
            "update": step,
            "mean_reward": float(np.mean(rewards)),
            "entropy": float(np.mean(entropies)),
        }
        history.append(row)
        progress(Progress(step, updates, "pretraining the RL policy", row))
        if checkpoint is not None and step % 100 == 0:
            checkpoint(policy, step)
    return policy, history
