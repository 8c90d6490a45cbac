"""The HeterPS reinforcement-learning scheduler: environment, LSTM policy, REINFORCE training,
the shipped pretrained policy and the planner behind `--scheduler rl` (docs/rl.md).

Import the submodules directly (`heterps_core.rl.env`, `.planner`, ...); this package does not
import torch on its own, so `import heterps_core.rl.features` stays light.
"""
