"""How the layer policy is trained: `RLTrainConfig` (the loss's weights and reward, the
work budget), shared by the loss (gradient.py) and the training loops (training.py).
"""

from __future__ import annotations

from dataclasses import dataclass

REWARDS = ("togo", "log", "clipped")  # gradient.py's docstring says what each one is

# The shipped policy's recipe (pretrained.py): here, torch-free, because every `heterps`
# command's argument parser reads them (`train-policy`'s defaults).
DEFAULT_POOL = 240
DEFAULT_UPDATES = 1500  # length of the learning-rate schedule
# The shipped file stops at this step of that schedule: the full 1,500 steps did not fit in
# the time the shared machine gave (docs/rl.md); `heterps train-policy` stops there too.
SHIPPED_STEPS: int | None = 1000


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
    reward: str = "togo"  # "togo", "log" or "clipped" (gradient.py)
    # Weight of the self-imitation term (0 turns it off). 0.5 made some 48-layer capped runs
    # collapse onto a bad plan early; 0.1 kept the speed-up (docs/benchmarks/rl-ablation.md).
    self_imitation: float = 0.1
    elite: int = 4  # how many of its own best plans the policy imitates
    dynamic_mask: bool = True  # mask choices the cost model says cannot end feasible
