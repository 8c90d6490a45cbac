"""Policy gradient for the layer policy: per instance (the paper's way) and across many
instances (the pretrained policy). No exact labels anywhere: every signal is the cost model's.

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
has sampled so far on the instance. The best plan ever sampled is the planner's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from heterps_core.budget import Deadline, Stopwatch, passed
from heterps_core.instance import Instance
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better
from heterps_core.rl.features import featurize
from heterps_core.rl.policy import EncodedInstance, LayerPolicy, PolicyConfig, one_thread
from heterps_core.rl.reward import INFEASIBLE_PENALTY, Rewarder

REWARDS = ("togo", "log", "clipped")
_INFEASIBLE_RATIO = 20.0  # "log": an infeasible plan scores like one 20x the reference


@dataclass(frozen=True)
class RLTrainConfig:
    samples: int = 64  # plans sampled per update
    lr: float = 3e-3
    entropy_coef: float = 0.01
    baseline_decay: float = 0.9  # moving-average baseline: b <- decay b + (1 - decay) mean(r)
    max_updates: int = 5000  # the work budget: results never depend on the machine's load
    budget_s: float | None = None  # optional cap, in CPU seconds of this thread (budget.py)
    patience: int | None = 60  # stop after this many updates without a new best plan
    grad_clip: float = 1.0
    reward: str = "togo"  # "togo", "log" or "clipped" (module docstring)
    # Weight of the self-imitation term (0 turns it off). 0.5 made some 48-layer capped runs
    # collapse onto a bad plan early; 0.1 kept the speed-up (docs/benchmarks/rl-ablation.md).
    self_imitation: float = 0.1
    elite: int = 4  # how many of its own best plans the policy imitates
    dynamic_mask: bool = True  # mask choices the cost model says cannot end feasible


class Problem:
    """One instance prepared for training: tensors, cost model, baseline and best plan seen."""

    def __init__(self, instance: Instance, dynamic_mask: bool = True) -> None:
        self.instance = instance
        self.costs = AssignmentCosts(instance)
        # The dynamic mask prices stages one by one: exact on v1 instances, not on v2 ones.
        self.encoded = EncodedInstance(
            featurize(instance), self.costs, dynamic_mask and self.costs.additive
        )
        self.elite: list[tuple[float, list[int]]] = []  # (cost, plan), cheapest first
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
        if outcome.cost is not None:
            self._remember(outcome.cost, [int(a) for a in assignment])
        if better(outcome, self.best_outcome):
            self.best, self.best_outcome = [int(a) for a in assignment], outcome
            return True
        return False

    def _remember(self, cost: float, plan: list[int], size: int = 16) -> None:
        if len(self.elite) >= size and cost >= self.elite[-1][0]:
            return
        if any(p == plan for _, p in self.elite):
            return
        self.elite.append((cost, plan))
        self.elite.sort(key=lambda e: e[0])
        del self.elite[size:]


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
