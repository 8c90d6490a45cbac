"""Imports every subcommand module so that each registers itself.

estimate: estimate · planning: plan, evaluate, pareto, what-if · profile: profile, catalogue ·
rl: train-policy · run: run · train_dp: train-dp. Adding a command module is one name in this
import.
"""

from heterps_core.cli import estimate, planning, profile, rl, run, train_dp  # noqa: F401
