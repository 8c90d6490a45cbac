"""The sync-mode interface: the pluggable part of data-parallel (and stage-replica) training.

A mode is a policy, not an engine. Every worker repeats *rounds*: pull the parameters, run
`local_steps` optimiser steps on its own copy, then send its update (new minus pulled
parameters) either to the parameter server, which adds it at once (`collective=False`), or
into an all-reduce that averages all workers' updates (`collective=True`). The mode decides,
from what the engine shows it (`SyncView`), how many local steps a round has, whether a
worker may start a round now (bounded staleness), whether the update is compressed, and, for
multi-phase schemes, when to change phase. Any engine that can run rounds and ask these
questions can use every mode: the data-parallel trainer here, or a pipeline stage's replicas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from heterps_core.dataparallel.compression import TopK
from heterps_core.dataparallel.params import Param, resolve


@dataclass(frozen=True)
class RoundPlan:
    """What one worker does in its next round."""

    local_steps: int
    collective: bool  # all-reduce with every worker (a barrier) instead of a PS push
    compress: bool = False  # send through the mode's compressor


@dataclass(frozen=True)
class SyncView:
    """What the engine shows a mode: the state every decision may depend on."""

    time_s: float
    global_step: int
    clocks: tuple[int, ...]  # rounds each worker has committed
    step_time_s: tuple[float, ...]  # current estimate of one local step per worker

    @property
    def workers(self) -> int:
        return len(self.clocks)


class SyncMode:
    """Base class; subclasses set `name`, `summary`, `params` and override what differs."""

    name: ClassVar[str]
    summary: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    # Every round ends in an all-reduce: all workers take the same number of steps.
    collective: ClassVar[bool] = False

    def __init__(self, **given: Any) -> None:
        self.p = resolve(self.params, given, f"mode.{self.name}")
        self.compressor: TopK | None = None

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """Name, summary and a JSON schema of the parameters: enough to generate a form."""
        return {
            "name": cls.name,
            "summary": cls.summary,
            "params": {
                "type": "object",
                "properties": {p.name: p.to_schema() for p in cls.params},
                "additionalProperties": False,
            },
            # What a form shows a person for each parameter (the names are for the API).
            "labels": {p.name: p.words for p in cls.params},
        }

    def settings(self) -> Mapping[str, Any]:
        return dict(self.p)

    def phase(self) -> str:
        return self.name

    def plan_round(self, worker: int, view: SyncView) -> RoundPlan:
        raise NotImplementedError

    def staleness_bound(self) -> int | None:
        """How many rounds a worker may be ahead of the slowest; None: unbounded."""
        return None

    def staleness(self, worker: int, view: SyncView) -> int:
        return view.clocks[worker] - min(view.clocks)

    def may_start(self, worker: int, view: SyncView) -> bool:
        bound = self.staleness_bound()
        return bound is None or self.staleness(worker, view) <= bound

    def observe_loss(self, loss: float, view: SyncView) -> str | None:
        """Called after every local step; returns a reason when the mode changed phase."""
        return None


def proportional_steps(base: int, worker: int, view: SyncView) -> int:
    """Local steps for `worker` so that it takes as long as the fastest worker's `base` steps."""
    fastest = min(view.step_time_s)
    return max(1, round(base * fastest / view.step_time_s[worker]))
