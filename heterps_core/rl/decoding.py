"""The state of a batch of partial plans while the policy decodes them layer by layer.

At step t every row (one plan being built) is in some stage: it started at layer `start` on
resource `prev`, and earlier, closed stages already hold `used[r]` units of each resource.
From that state the cost model says, for every resource r, what choosing it for layer t adds
to the hourly bill (the *increment*: continuing the stage costs
stage(start..t, r) - stage(start..t-1, r), opening one costs stage(t..t, r); a stage's price
depends only on its own layers, so a feasible plan's cost is the sum of its increments) and
whether the choice can still lead to a feasible plan:

- the stage it makes (start..t on r, or t..t) must be provisionable on its own, and
- the units it needs, plus the units the closed stages already hold on r, must fit r's count.

Those choices are masked out (the *dynamic* mask), so sampled plans are feasible unless a row
runs into a dead end (every usable resource fails both tests); then the row falls back to the
static mask and its plan is priced as usual, infeasible or not. The increments are both the
decoder's per-step features and the per-step rewards of the trainer (`training.py`).
"""

from __future__ import annotations

import numpy as np

from heterps_core.rl.fastcost import AssignmentCosts

DYNAMIC_FEATURES = 5
_CAP = 10.0


class PartialPlans:
    """k partial plans of one instance; `options(t)` then `advance(t, actions)` per layer."""

    def __init__(
        self,
        costs: AssignmentCosts,
        reference: float,
        static_mask: np.ndarray,
        k: int,
        dynamic_mask: bool = True,
    ) -> None:
        self.costs = costs
        self.n_resources = costs.n_resources
        self.n_slots = static_mask.shape[1]
        self.static_mask = static_mask
        self.dynamic_mask = dynamic_mask
        # Features in units of "one average layer's share of the reference bill".
        self.unit = reference / max(1, costs.n_layers)
        self.k = k
        self.start = [0] * k
        self.prev = [-1] * k
        self.closed = np.zeros((k, self.n_slots), dtype=np.int64)  # units of closed stages
        self.current_units = np.zeros(k, dtype=np.int64)  # units of the open stage
        self.counts = np.zeros(self.n_slots, dtype=np.int64)
        self.counts[: self.n_resources] = costs.counts
        self.dead_ends = 0
        self._t = 0
        self._ok = np.zeros((k, self.n_slots), dtype=bool)
        self._delta = np.zeros((k, self.n_slots), dtype=np.float64)

    def options(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(features [k, n_slots, DYNAMIC_FEATURES], mask [k, n_slots]) for layer t."""
        units = np.empty((self.k, self.n_slots), dtype=np.int64)
        delta = np.empty((self.k, self.n_slots), dtype=np.float64)
        memo: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        for row in range(self.k):
            key = (self.start[row], self.prev[row])
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = self._choices(t, *key)
            units[row], delta[row] = hit
        held = self.closed + units
        ok = (units >= 0) & (held <= self.counts) & self.static_mask[t]
        ratio = delta / self.unit
        feats = np.zeros((self.k, self.n_slots, DYNAMIC_FEATURES), dtype=np.float32)
        feats[..., 0] = np.minimum(ratio, _CAP)
        feats[..., 1] = np.log1p(np.clip(ratio, 0.0, _CAP))
        cheapest = np.where(ok, delta, np.inf).min(axis=1, keepdims=True)
        cheapest = np.where(np.isfinite(cheapest), cheapest, 0.0)
        feats[..., 2] = np.minimum((delta - cheapest) / self.unit, _CAP)
        feats[..., 4] = np.minimum(held / np.maximum(self.counts, 1), 1.0)
        bad = ~ok
        feats[bad] = (_CAP, np.log1p(_CAP), _CAP, 1.0, 1.0)
        self._ok, self._t = ok, t
        self._delta = np.where(ok, delta, _CAP * self.unit)
        return feats, ok

    def _choices(self, t: int, start: int, prev: int) -> tuple[np.ndarray, np.ndarray]:
        """Units (-1: cannot be provisioned or used) and cost increment of each resource."""
        units = np.full(self.n_slots, -1, dtype=np.int64)
        delta = np.zeros(self.n_slots, dtype=np.float64)
        for r in range(self.n_resources):
            if not self.static_mask[t, r]:
                continue
            if r == prev:
                u, cost, _ = self.costs.stage(start, t, r)
                d = cost - self.costs.stage(start, t - 1, r)[1]
            else:
                u, d, _ = self.costs.stage(t, t, r)
            # The closed units the caller adds count closed stages only: the open stage is on
            # `prev`, and it is either the one being extended or closed by this choice.
            units[r], delta[r] = u, d
        return units, delta

    def mask_for(self, mask: np.ndarray) -> np.ndarray:
        """The mask the policy samples from: dynamic where it leaves a choice, else static."""
        static = np.broadcast_to(self.static_mask[self._t], (self.k, self.n_slots))
        if not self.dynamic_mask:
            return static
        rows = mask.any(axis=1)
        if rows.all():
            return mask
        out = mask.copy()
        out[~rows] = static[~rows]
        self.dead_ends += int((~rows).sum())
        return out

    def advance(self, t: int, actions: list[int]) -> np.ndarray:
        """Apply layer t's choices; returns each row's increment (dollars per hour; the
        dead-end penalty of `_CAP` average layers where the choice was not feasible)."""
        out = self._delta[np.arange(self.k), actions]
        for row, a in enumerate(actions):
            prev = self.prev[row]
            if a == prev:
                self.current_units[row] = max(0, self.costs.stage(self.start[row], t, a)[0])
                continue
            if prev >= 0:
                self.closed[row, prev] += self.current_units[row]
            self.start[row] = t
            self.prev[row] = a
            self.current_units[row] = max(0, self.costs.stage(t, t, a)[0])
        return out
