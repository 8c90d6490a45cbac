"""The pretrained policy shipped with the package, and the recipe that reproduces it.

Recipe (`heterps train-policy` runs exactly this): a pool of generated instances with seeds
disjoint from every seed the tests and the benchmark use (>= `POOL_SEED_OFFSET`), 4-40
layers and 2-6 resources, a quarter of those with up to 12 layers with binding availability
caps. Training: `IMITATION_STEPS` steps of imitation of each instance's exact optimum (the
`exact` scheduler's plan, teacher-forced), then `DEFAULT_UPDATES` REINFORCE steps on the cost
model's reward, which is what tunes the sampling distribution around those plans.
(`build_pretrained(extra=...)` adds more instances, e.g. zoo models; the shipped file was
trained without them.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from heterps_core.instance import Instance
from heterps_core.progress import ProgressCallback, no_progress
from heterps_core.rl.checkpoint import load_policy, save_policy
from heterps_core.rl.policy import LayerPolicy, PolicyConfig
from heterps_core.rl.training import Problem, TrainConfig, imitate, pretrain

PRETRAINED_PATH = Path(__file__).with_name("pretrained.pt")
POOL_SEED_OFFSET = 1_000_000
DEFAULT_POOL = 240
DEFAULT_UPDATES = 300
IMITATION_STEPS = 600
PRETRAIN_CONFIG = TrainConfig(samples=32, lr=5e-4, entropy_coef=0.01)
_LAYER_CHOICES = (4, 6, 8, 12, 16, 20, 24, 32, 40)


def training_pool(seed: int = 0, size: int = DEFAULT_POOL) -> list[Instance]:
    """The generated instances the shipped policy is trained on (deterministic in `seed`)."""
    from heterps_core.generate import random_instance

    rng = np.random.default_rng(seed)
    pool = []
    for i in range(size):
        n_layers = int(rng.choice(_LAYER_CHOICES))
        n_resources = int(rng.integers(2, 7))
        # Capped instances are slow to generate at length (the generator solves them), so
        # caps are drawn only for the shorter chains.
        caps = bool(rng.random() < 0.25) and n_layers <= 12
        pool.append(random_instance(POOL_SEED_OFFSET + seed * 10_000 + i, n_layers,
                                    n_resources, caps=caps))
    return pool


def build_pretrained(
    seed: int = 0,
    updates: int = DEFAULT_UPDATES,
    pool_size: int = DEFAULT_POOL,
    imitation_steps: int = IMITATION_STEPS,
    extra: Sequence[Instance] = (),
    progress: ProgressCallback = no_progress,
) -> tuple[LayerPolicy, dict[str, Any]]:
    """Train the pretrained policy from scratch; returns it with the metadata saved beside it."""
    from heterps_core.schedulers.exact import exact_plan

    pool = training_pool(seed, pool_size) + list(extra)
    problems = [Problem(inst) for inst in pool]
    taught, targets = [], []
    for problem in problems:
        plan = exact_plan(problem.instance)
        if plan.feasible and plan.assignment is not None:
            names = problem.instance.resource_names
            taught.append(problem)
            targets.append([names.index(r) for r in plan.assignment])
    torch.manual_seed(seed)
    policy = LayerPolicy(PolicyConfig())
    imitation = imitate(policy, taught, targets, imitation_steps, seed=seed, progress=progress)
    policy, history = pretrain(
        pool, updates, seed=seed, config=PRETRAIN_CONFIG, policy=policy, problems=problems,
        progress=progress,
    )
    tail = history[-50:]
    meta = {
        "seed": seed,
        "updates": updates,
        "pool_size": len(pool),
        "imitation_steps": imitation_steps,
        "imitated_instances": len(taught),
        "final_nll_per_layer": float(np.mean([r["nll_per_layer"] for r in imitation[-50:]])),
        "extra_instances": [inst.name for inst in extra],
        "final_mean_reward": float(np.mean([row["mean_reward"] for row in tail])),
        "final_entropy": float(np.mean([row["entropy"] for row in tail])),
    }
    return policy, meta


def save_pretrained(policy: LayerPolicy, meta: dict[str, Any], path: Path | None = None) -> Path:
    target = path or PRETRAINED_PATH
    save_policy(policy, target, meta)
    return target


def load_pretrained(path: Path | None = None) -> LayerPolicy:
    policy, _ = load_policy(path or PRETRAINED_PATH)
    return policy
