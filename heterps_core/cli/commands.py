"""Imports every subcommand module so that each registers itself (one line per module)."""

from heterps_core.cli import planning  # noqa: F401  plan, evaluate, pareto
