"""The pretrained policy shipped with the package, and the recipe that reproduces it.

Recipe (`heterps train-policy` runs exactly this; no exact labels, pure policy gradient on the
cost model): a pool of generated instances with seeds disjoint from every seed the tests and
the benchmark use (>= `POOL_SEED_OFFSET`), 16-128 layers (a few of 8 for the early steps),
2-8 resources, a third of them with binding availability caps. Training: `DEFAULT_UPDATES`
steps of the per-step ("togo") policy gradient of `training.py` with self-imitation of each
instance's own best sampled plans, 4 instances x 32 samples per step, with a curriculum over
size: the longest chain drawn grows from 32 layers to the pool's maximum over the first half.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from heterps_core.instance import Instance
from heterps_core.progress import ProgressCallback, no_progress
from heterps_core.rl.checkpoint import load_policy, save_policy
from heterps_core.rl.policy import LayerPolicy, PolicyConfig
from heterps_core.rl.problem import Problem
from heterps_core.rl.settings import (
    DEFAULT_POOL,
    DEFAULT_UPDATES,
    SHIPPED_STEPS,
    RLTrainConfig,
)
from heterps_core.rl.training import pretrain

PRETRAINED_PATH = Path(__file__).with_name("pretrained.pt")
POOL_SEED_OFFSET = 1_000_000
PRETRAIN_CONFIG = RLTrainConfig(samples=32, lr=1e-3, entropy_coef=0.02, self_imitation=0.5)
_LAYER_CHOICES = (8, 16, 24, 32, 48, 64, 96, 128)
CURRICULUM_START = 32  # longest chain drawn at step 1


def training_pool(seed: int = 0, size: int = DEFAULT_POOL) -> list[Instance]:
    """The generated instances the shipped policy is trained on (deterministic in `seed`)."""
    from heterps_core.generate import random_instance

    rng = np.random.default_rng(seed)
    pool = []
    for i in range(size):
        n_layers = int(rng.choice(_LAYER_CHOICES))
        n_resources = int(rng.integers(2, 9))
        caps = bool(rng.random() < 1 / 3)
        pool.append(random_instance(POOL_SEED_OFFSET + seed * 10_000 + i, n_layers,
                                    n_resources, caps=caps))
    return pool


def build_pretrained(
    seed: int = 0,
    updates: int = DEFAULT_UPDATES,
    pool_size: int = DEFAULT_POOL,
    extra: Sequence[Instance] = (),
    progress: ProgressCallback = no_progress,
    checkpoint: Callable[[LayerPolicy, int], None] | None = None,
    budget_s: float | None = None,
    stop_after: int | None = SHIPPED_STEPS,
) -> tuple[LayerPolicy, dict[str, Any]]:
    """Train the pretrained policy from random weights; returns it with the metadata saved
    beside it. `checkpoint(policy, step)` is called every 100 steps; `budget_s` (CPU seconds)
    stops early; `stop_after` ends after that many steps of the `updates`-step schedule."""
    pool = training_pool(seed, pool_size) + list(extra)
    problems = [Problem(inst) for inst in pool]
    torch.manual_seed(seed)
    policy = LayerPolicy(PolicyConfig())
    sizes = [len(p.instance.layers) for p in problems]
    longest = max(sizes)
    half = max(1, updates // 2)

    def allowed(step: int) -> list[int]:
        limit = CURRICULUM_START + (longest - CURRICULUM_START) * min(1.0, step / half)
        return [i for i, n in enumerate(sizes) if n <= limit]

    policy, history = pretrain(
        pool, updates, seed=seed, config=PRETRAIN_CONFIG, policy=policy, problems=problems,
        progress=progress, curriculum=allowed, checkpoint=checkpoint, budget_s=budget_s,
        stop_after=stop_after,
    )
    tail = history[-50:]
    meta = {
        "seed": seed,
        "updates": len(history),
        "schedule_updates": updates,
        "pool_size": len(pool),
        "labels": "none (policy gradient on the cost model only)",
        "capped_instances": sum(p.instance.name.endswith("-caps") for p in problems),
        "layers": [min(sizes), longest],
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
