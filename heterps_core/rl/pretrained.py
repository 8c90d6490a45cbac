"""The pretrained policy shipped with the package, and the recipe that reproduces it.

Recipe (`heterps train-policy` runs exactly this): a pool of generated instances with seeds
disjoint from every seed the tests and the benchmark use (>= `POOL_SEED_OFFSET`), 4-40 layers
and 2-6 resources, a quarter of those up to 12 layers with binding availability caps, plus the zoo instances
when the zoo can build them; then `training.pretrain` for `DEFAULT_UPDATES` steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heterps_core.instance import Instance
from heterps_core.progress import ProgressCallback, no_progress
from heterps_core.rl.checkpoint import load_policy, save_policy
from heterps_core.rl.policy import LayerPolicy, PolicyConfig
from heterps_core.rl.training import TrainConfig, pretrain

PRETRAINED_PATH = Path(__file__).with_name("pretrained.pt")
POOL_SEED_OFFSET = 1_000_000
DEFAULT_POOL = 240
DEFAULT_UPDATES = 700
PRETRAIN_CONFIG = TrainConfig(samples=32, lr=2e-3, entropy_coef=0.01)
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
    extra: Sequence[Instance] = (),
    progress: ProgressCallback = no_progress,
) -> tuple[LayerPolicy, dict[str, Any]]:
    """Train the pretrained policy from scratch; returns it with the metadata saved beside it."""
    pool = training_pool(seed, pool_size) + list(extra)
    policy, history = pretrain(
        pool, updates, seed=seed, config=PRETRAIN_CONFIG, policy_config=PolicyConfig(),
        progress=progress,
    )
    tail = history[-50:]
    meta = {
        "seed": seed,
        "updates": updates,
        "pool_size": len(pool),
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
