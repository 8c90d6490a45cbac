"""ASHL: a coarse asynchronous phase (AHL), then a fine semi-asynchronous one (SHL).

AHL: each worker runs local steps in proportion to its speed (the fastest runs `ahl_steps`)
so all finish a round at about the same time, and pushes rarely; nobody waits.
SHL: rounds of `shl_steps` (for the fastest, proportionally fewer for slower workers), each
pushed as a top-k update (error feedback optional), and no worker may be more than
`staleness` SHL rounds ahead of the slowest.
The switch happens when the rolling training loss falls below `switch_loss` (0: off) or
stops improving by `plateau_delta` (relative) between two windows of `plateau_window` steps.
"""

from __future__ import annotations

from collections import deque

from heterps_core.dataparallel.compression import TopK
from heterps_core.dataparallel.modes.base import (
    RoundPlan,
    SyncMode,
    SyncView,
    proportional_steps,
)
from heterps_core.dataparallel.modes.registry import register
from heterps_core.dataparallel.params import Param

AHL = "AHL"
SHL = "SHL"


@register
class ASHL(SyncMode):
    name = "ashl"
    summary = "ASHL: speed-proportional async rounds, then bounded-staleness top-k rounds."
    params = (
        Param("ahl_steps", "int", 16, "AHL: local steps of the fastest worker per round", 1, 10000,
              label="Coarse phase: steps per round"),
        Param("shl_steps", "int", 4, "SHL: local steps of the fastest worker per round", 1, 10000,
              label="Fine phase: steps per round"),
        Param("staleness", "int", 3, "SHL: rounds a worker may be ahead of the slowest", 0, 1000,
              label="Fine phase: staleness bound (rounds)"),
        Param("topk_ratio", "float", 0.05, "SHL: fraction of entries each push sends", 1e-6, 1.0,
              label="Fine phase: share of entries sent"),
        Param("error_feedback", "bool", True, "SHL: carry unsent entries to the next push",
              label="Fine phase: carry unsent entries over"),
        Param("switch_loss", "float", 0.0, "switch below this training loss (0: off)", 0.0, None,
              label="Switch below training loss"),
        # 50 steps and 5%: every zoo model (tiny, 3 workers, 1/1/4x) switches within its first
        # 100-150 steps; 100 and 1% switched at step 600 or never (issue 17 item 8).
        Param("plateau_window", "int", 50, "steps per window of the plateau test (0: off)", 0,
              1_000_000, label="Plateau test: window (steps)"),
        Param("plateau_delta", "float", 0.05, "relative improvement below which loss plateaus",
              0.0, 1.0, label="Plateau test: minimum improvement"),
    )

    def __init__(self, **given: object) -> None:
        super().__init__(**given)
        self._phase = AHL
        self._base_clocks: tuple[int, ...] = ()
        window = int(self.p["plateau_window"])
        self._losses: deque[float] = deque(maxlen=max(window, 20))
        self._previous_window: float | None = None
        self._steps_in_window = 0

    def phase(self) -> str:
        return self._phase

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        if self._phase == AHL:
            return RoundPlan(proportional_steps(int(self.p["ahl_steps"]), worker, view), False)
        return RoundPlan(proportional_steps(int(self.p["shl_steps"]), worker, view), False, True)

    def staleness_bound(self) -> int | None:
        return int(self.p["staleness"]) if self._phase == SHL else None

    def staleness(self, worker: int, view: SyncView) -> int:
        if self._phase == AHL:
            return super().staleness(worker, view)
        rounds = [c - b for c, b in zip(view.clocks, self._base_clocks, strict=True)]
        return rounds[worker] - min(rounds)

    def observe_loss(self, loss: float, view: SyncView) -> str | None:
        if self._phase == SHL:
            return None
        self._losses.append(loss)
        reason = self._switch_reason()
        if reason is not None:
            self._phase = SHL
            self._base_clocks = view.clocks
            self.compressor = TopK(float(self.p["topk_ratio"]), bool(self.p["error_feedback"]))
        return reason

    def _switch_reason(self) -> str | None:
        threshold = float(self.p["switch_loss"])
        recent = list(self._losses)[-20:]
        if threshold > 0 and len(recent) == 20 and sum(recent) / 20 < threshold:
            return "threshold"
        window = int(self.p["plateau_window"])
        if window == 0:
            return None
        self._steps_in_window += 1
        if self._steps_in_window < window:
            return None
        self._steps_in_window = 0
        mean = sum(list(self._losses)[-window:]) / window
        previous, self._previous_window = self._previous_window, mean
        if previous is not None and previous - mean < float(self.p["plateau_delta"]) * previous:
            return "plateau"
        return None
