"""Imports every module that defines work kinds, so each registers itself (one line each)."""

from webapp.background import evaluate_kind  # noqa: F401  evaluate: price assignments
from webapp.jobs import run_kind  # noqa: F401  job-run: execute an approved plan
from webapp.planning import plan_kind  # noqa: F401  plan: solve with several schedulers
from webapp.profiling import profile_kind  # noqa: F401  profile: time a model per layer
from webapp.rltraining import train_kind  # noqa: F401  rl-train: train the RL policy
