"""Imports every subcommand module so that each registers itself (one line per module)."""

from heterps_core.cli import planning  # noqa: F401  plan, evaluate, pareto
from heterps_core.cli import train_dp  # noqa: F401  train-dp
from heterps_core.cli import run  # noqa: F401  run
from heterps_core.cli import profile  # noqa: F401  profile, catalogue
from heterps_core.cli import rl  # noqa: F401  train-policy
