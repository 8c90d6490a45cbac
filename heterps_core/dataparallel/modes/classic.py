"""The classic sync modes: BSP, ASP, SSP and local SGD."""

from __future__ import annotations

from heterps_core.dataparallel.modes.base import RoundPlan, SyncMode, SyncView
from heterps_core.dataparallel.modes.registry import register
from heterps_core.dataparallel.params import Param


@register
class BSP(SyncMode):
    name = "bsp"
    summary = "Bulk-synchronous: every step, all workers all-reduce and wait for the slowest."
    collective = True

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        return RoundPlan(local_steps=1, collective=True)


@register
class ASP(SyncMode):
    name = "asp"
    summary = "Asynchronous: each worker pushes every step to the parameter server, never waits."

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        return RoundPlan(local_steps=1, collective=False)


@register
class SSP(SyncMode):
    name = "ssp"
    summary = "Stale-synchronous: like ASP, but no worker runs more than s steps ahead."
    params = (
        Param("staleness", "int", 3, "steps a worker may be ahead of the slowest", 0, 1000,
              label="Staleness bound (steps)"),
    )

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        return RoundPlan(local_steps=1, collective=False)

    def staleness_bound(self) -> int | None:
        return int(self.p["staleness"])


@register
class LocalSGD(SyncMode):
    name = "local_sgd"
    summary = "Local SGD: H local steps, then all workers average their parameters."
    collective = True
    params = (Param("period", "int", 8, "local steps H between averagings", 1, 10000,
                    label="Local steps between averagings"),)

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        return RoundPlan(local_steps=int(self.p["period"]), collective=True)
