"""REINFORCE for the layer policy: per instance (the paper's way) and across many instances
(the pretrained policy).

Each update samples `samples` whole plans from the policy for one instance, prices them all
with the cost model (the batched rollout of `env.py`'s reward) and takes a policy-gradient
step with a baseline and an entropy bonus. The best plan ever sampled is kept: the policy is a
search distribution, and the planner's answer is the best plan it has seen.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from heterps_core.instance import Instance
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better
from heterps_core.rl.features import featurize
from heterps_core.rl.policy import EncodedInstance, LayerPolicy, PolicyConfig, one_thread
from heterps_core.rl.reward import Rewarder


@dataclass(frozen=True)
class TrainConfig:
    samples: int = 64  # plans sampled per update
    lr: float = 3e-3
    entropy_coef: float = 0.01
    baseline_decay: float = 0.9  # moving-average baseline: b <- decay b + (1 - decay) mean(r)
    max_updates: int = 5000
    budget_s: float | None = None  # wall-clock limit of the training loop
    patience: int | None = 60  # stop after this many updates without a new best plan
    grad_clip: float = 1.0


class Problem:
    """One instance prepared for training: tensors, cost model, baseline and best plan seen."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.costs = AssignmentCosts(instance)
        self.encoded = EncodedInstance(featurize(instance), self.costs)
        self.rewarder = Rewarder(self.costs)
        self.baseline: float | None = None
        self.best: list[int] | None = None
        self.best_outcome: Outcome | None = None
        self.first_reason: str | None = None  # why the first infeasible plan failed
        self.first: tuple[list[int], Outcome] | None = None  # a start when none is feasible

    @property
    def mask(self) -> np.ndarray:
        return self.encoded.features.mask

    def offer(self, assignment: Sequence[int], outcome: Outcome) -> bool:
        """Keep `assignment` if it beats the best plan seen; True when it does."""
        if self.first is None:
            self.first = ([int(a) for a in assignment], outcome)
        if outcome.reason is not None and self.first_reason is None:
            self.first_reason = outcome.reason
        if better(outcome, self.best_outcome):
            self.best, self.best_outcome = [int(a) for a in assignment], outcome
            return True
        return False


@dataclass(frozen=True)
class UpdateStats:
    mean_reward: float
    entropy: float
    improved: bool


def policy_gradient_loss(
    policy: LayerPolicy,
    problem: Problem,
    config: TrainConfig,
    generator: torch.Generator,
    moving_baseline: bool = True,
) -> tuple[torch.Tensor, UpdateStats]:
    """The REINFORCE loss of one batch of sampled plans, and what the batch showed."""
    rollout = policy.rollout(problem.encoded, config.samples, generator=generator)
    actions = rollout.actions.numpy()
    rewards, outcomes = problem.rewarder.batch(actions)
    improved = False
    for row, outcome in zip(actions, outcomes, strict=True):
        improved |= problem.offer(row, outcome)
    mean = float(rewards.mean())
    if moving_baseline:
        # Per-instance training: one instance, so a moving average of its rewards is a stable
        # baseline across updates.
        if problem.baseline is None:
            problem.baseline = mean
        baseline = problem.baseline
        problem.baseline = config.baseline_decay * baseline + (1 - config.baseline_decay) * mean
    else:
        # Across instances each one is seen rarely; the batch's own mean is the baseline.
        baseline = mean
    advantage = torch.from_numpy((rewards - baseline) / (rewards.std() + 1e-6)).float()
    loss = -(advantage * rollout.log_prob).mean() - config.entropy_coef * rollout.entropy.mean()
    return loss, UpdateStats(mean, float(rollout.entropy.mean().detach()), improved)


@dataclass
class InstanceTraining:
    """What per-instance training found; `history` has one row per update."""

    problem: Problem
    updates: int
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)


def train_on_instance(
    instance: Instance,
    config: TrainConfig,
    seed: int = 0,
    policy: LayerPolicy | None = None,
    problem: Problem | None = None,
    progress: ProgressCallback = no_progress,
) -> InstanceTraining:
    """Train `policy` (a fresh one when None) on one instance until budget, updates or
    patience run out. The problem's best plan is the answer; pass `problem` to continue from
    plans already seen."""
    with one_thread():
        return _train_on_instance(instance, config, seed, policy, problem, progress)


def _train_on_instance(
    instance: Instance,
    config: TrainConfig,
    seed: int,
    policy: LayerPolicy | None,
    problem: Problem | None,
    progress: ProgressCallback,
) -> InstanceTraining:
    torch.manual_seed(seed)
    policy = policy or LayerPolicy(PolicyConfig())
    policy.train()
    problem = problem or Problem(instance)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    start = time.perf_counter()
    deadline = start + config.budget_s if config.budget_s is not None else float("inf")
    history: list[dict[str, float]] = []
    since_best = 0
    update = 0
    while update < config.max_updates and time.perf_counter() < deadline:
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
    return InstanceTraining(problem, update, time.perf_counter() - start, history)


def imitate(
    policy: LayerPolicy,
    problems: Sequence[Problem],
    targets: Sequence[Sequence[int]],
    steps: int,
    seed: int = 0,
    lr: float = 3e-3,
    instances_per_step: int = 8,
    progress: ProgressCallback = no_progress,
) -> list[dict[str, float]]:
    """Warm start by imitation: maximise the log-probability of known good plans (the exact
    optimum of each training instance), teacher-forced. Policy gradient alone spends most of a
    small CPU budget rediscovering what such plans look like."""
    with one_thread():
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
        forced = [torch.tensor([list(t)], dtype=torch.long) for t in targets]
        per_step = min(instances_per_step, len(problems))
        history: list[dict[str, float]] = []
        policy.train()
        for step in range(1, steps + 1):
            optimizer.zero_grad()
            total = 0.0
            for index in rng.choice(len(problems), size=per_step, replace=False):
                i = int(index)
                rollout = policy.rollout(problems[i].encoded, 1, forced=forced[i])
                loss = -rollout.log_prob.mean() / problems[i].encoded.n_layers / per_step
                loss.backward()
                total += float(loss.detach())
            optimizer.step()
            row = {"update": step, "nll_per_layer": total}
            history.append(row)
            progress(Progress(step, steps, "imitating exact plans", row))
        return history


def pretrain(
    instances: Sequence[Instance],
    updates: int,
    seed: int = 0,
    config: TrainConfig | None = None,
    instances_per_step: int = 4,
    policy_config: PolicyConfig | None = None,
    progress: ProgressCallback = no_progress,
    policy: LayerPolicy | None = None,
    problems: Sequence[Problem] | None = None,
) -> tuple[LayerPolicy, list[dict[str, float]]]:
    """Train one policy (a fresh one, or `policy`) across `instances` for `updates` optimizer
    steps; each step averages the policy gradient of `instances_per_step` instances drawn in a
    seeded order. Pass `problems` (built from `instances`) to reuse prepared ones."""
    with one_thread():
        torch.manual_seed(seed)
        return _pretrain(
            list(problems) if problems is not None else [Problem(i) for i in instances],
            updates, seed, config or TrainConfig(), instances_per_step,
            policy or LayerPolicy(policy_config or PolicyConfig()), progress,
        )


def _pretrain(
    problems: list[Problem],
    updates: int,
    seed: int,
    config: TrainConfig,
    instances_per_step: int,
    policy: LayerPolicy,
    progress: ProgressCallback,
) -> tuple[LayerPolicy, list[dict[str, float]]]:
    policy.train()
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, updates))
    history: list[dict[str, float]] = []
    per_step = min(instances_per_step, len(problems))
    for step in range(1, updates + 1):
        optimizer.zero_grad()
        rewards, entropies = [], []
        drawn = rng.choice(len(problems), size=per_step, replace=False)
        for index in drawn:
            loss, stats = policy_gradient_loss(
                policy, problems[int(index)], config, generator, moving_baseline=False
            )
            (loss / instances_per_step).backward()
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
    return policy, history
