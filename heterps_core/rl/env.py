"""A gymnasium environment over one planning instance: one step per layer, action = resource.

The observation of step t is layer t's features (kind, position, log output/sync/memory sizes),
its per-resource features padded to `MAX_RESOURCES` (log compute time, price-weighted compute,
traffic and sync cost, memory ratio; see `features.py`) and the previous action as a one-hot.
`info["action_mask"]` (and `action_masks()`) marks the resources the layer can use. The reward
is 0 until the last layer, then the cost model's verdict (`reward.py`); an infeasible plan or a
masked action ends the episode with the penalty and a `reason` in `info`.

The trainer does not step this environment one layer at a time: it samples whole batches of
plans from the policy and prices them with `PlanningEnv.rewarder.batch` (the same reward),
which is the vectorised rollout. `gymnasium.vector.SyncVectorEnv` works on it too.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from heterps_core.instance import Instance
from heterps_core.rl.fastcost import AssignmentCosts
from heterps_core.rl.features import (
    LAYER_FEATURES,
    MAX_RESOURCES,
    PAIR_FEATURES,
    InstanceFeatures,
    featurize,
)
from heterps_core.rl.reward import INFEASIBLE_PENALTY, Rewarder

OBSERVATION_BOUND = 100.0  # features are logs and ratios; clipping only guards the space
OBSERVATION_SIZE = LAYER_FEATURES + MAX_RESOURCES * PAIR_FEATURES + MAX_RESOURCES + 1


class PlanningEnv(gym.Env[np.ndarray, np.int64]):
    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, instance: Instance) -> None:
        super().__init__()
        self.instance = instance
        self.features: InstanceFeatures = featurize(instance)
        self.costs = AssignmentCosts(instance)
        self.rewarder = Rewarder(self.costs)
        self.action_space = spaces.Discrete(MAX_RESOURCES)
        self.observation_space = spaces.Box(
            low=-OBSERVATION_BOUND, high=OBSERVATION_BOUND, shape=(OBSERVATION_SIZE,),
            dtype=np.float32,
        )
        self._assignment: list[int] = []

    @property
    def n_layers(self) -> int:
        return self.features.n_layers

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._assignment = []
        return self._observation(), {"action_mask": self.action_masks()}

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        t = len(self._assignment)
        if t >= self.n_layers:
            raise RuntimeError("step() called after the episode ended; call reset()")
        index = int(action)
        if not self.features.mask[t, index]:
            layer = self.instance.layers[t].name
            where = (
                self.instance.resources[index].name
                if index < len(self.instance.resources)
                else f"resource #{index} (the instance has {len(self.instance.resources)})"
            )
            info = {"feasible": False, "reason": f"layer {layer} cannot use {where}"}
            return self._observation(), -INFEASIBLE_PENALTY, True, False, info
        self._assignment.append(index)
        if len(self._assignment) < self.n_layers:
            return self._observation(), 0.0, False, False, {"action_mask": self.action_masks()}
        reward, outcome = self.rewarder.one(self._assignment)
        info = {
            "feasible": outcome.feasible,
            "cost_per_hour": outcome.cost,
            "throughput": outcome.throughput if outcome.feasible else None,
            "reason": outcome.reason,
            "assignment": [self.instance.resources[r].name for r in self._assignment],
        }
        return self._observation(), reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """The resources the current layer can use (all False once the episode is over)."""
        t = len(self._assignment)
        if t >= self.n_layers:
            return np.zeros(MAX_RESOURCES, dtype=bool)
        return self.features.mask[t].copy()

    def _observation(self) -> np.ndarray:
        t = min(len(self._assignment), self.n_layers - 1)
        previous = np.zeros(MAX_RESOURCES + 1, dtype=np.float32)
        previous[self._assignment[-1] if self._assignment else MAX_RESOURCES] = 1.0
        observation = np.concatenate(
            [self.features.layer[t], self.features.pair[t].reshape(-1), previous]
        )
        return np.clip(observation, -OBSERVATION_BOUND, OBSERVATION_BOUND).astype(np.float32)
