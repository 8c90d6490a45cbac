"""ADSP-style: fast workers never wait; commit rates are set so all commit about equally often.

ADSP (Hu et al.) searches commit rates online. Here each worker commits after as many local
steps as it completes in the time the fastest worker needs for `commit_steps`, recomputed
every round from the rolling step times, so every worker commits at about the same rate
while nobody waits for anybody.
"""

from __future__ import annotations

from heterps_core.dataparallel.modes.base import (
    RoundPlan,
    SyncMode,
    SyncView,
    proportional_steps,
)
from heterps_core.dataparallel.modes.registry import register
from heterps_core.dataparallel.params import Param


@register
class ADSP(SyncMode):
    name = "adsp"
    summary = "ADSP-style: no waiting; local steps per commit proportional to speed."
    params = (
        Param("commit_steps", "int", 4, "local steps of the fastest worker per commit", 1, 10000,
              label="Steps per commit (fastest worker)"),
    )

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        steps = proportional_steps(int(self.p["commit_steps"]), worker, view)
        return RoundPlan(local_steps=steps, collective=False)
