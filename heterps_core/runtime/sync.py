"""The pipeline's sync modes: how a stage's replicas combine dense gradients, and how sparse
gradients reach the parameter server. A registry of small `PipelineSync` classes (it holds
one stateless instance of each: `get` returns it); adding one is one class plus `@register`.

Not the data-parallel registry (`heterps_core.dataparallel.modes`, whose `PipelineSync`s
govern rounds of whole-model workers): the two registries' names are scoped by the job's
runner, and a pipeline mode name means one thing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from heterps_core.plan import Plan
from heterps_core.registry import Registry, UnknownName
from heterps_core.runtime.errors import RunConfigError

if TYPE_CHECKING:
    import torch


class PipelineSync:
    name: ClassVar[str]
    summary: ClassVar[str]
    # True: the PS answers a pull for round t only after every replica's round t-1 push is
    # applied (summed), so runs are repeatable. False: pushes apply as they arrive.
    ps_synchronous: ClassVar[bool] = True
    # True: consecutive mini-batches never overlap (the pipeline drains every mini-batch),
    # so a plan of several stages reaches at most `Plan.flushed_throughput`.
    flushes: ClassVar[bool] = True

    def sync_dense(self, params: Sequence[torch.nn.Parameter], group: Any, replicas: int) -> None:
        """Called after a replica's backward pass, before its optimizer step."""

    def run_ahead(self, has_dense: bool) -> int:
        """Mini-batches a (non-last) stage may forward before the oldest one's backward.

        0 flushes the pipeline every mini-batch (exact SGD). More overlaps stages across
        mini-batches at the price of staleness.
        """
        return 0


_MODES: Registry[PipelineSync] = Registry("sync mode")


def register(cls: type[PipelineSync]) -> type[PipelineSync]:
    _MODES.register(cls())
    return cls


def names() -> list[str]:
    return _MODES.names()


def get(name: str) -> PipelineSync:
    try:
        return _MODES.get(name)
    except UnknownName as exc:
        raise RunConfigError("sync", str(exc)) from None


def bound(plan: Plan, mode: str) -> float | None:
    """The throughput a run of `plan` in sync mode `mode` can reach at most when that is below
    the plan's own estimate (a flushing mode, several stages); None otherwise."""
    if len(plan.stages) < 2 or not get(mode).flushes:
        return None
    return plan.flushed_throughput


def all_reduce_mean(params: Sequence[torch.nn.Parameter], group: Any, replicas: int) -> None:
    """One flat all-reduce of every dense gradient (missing gradients count as zero)."""
    if replicas <= 1 or not params:
        return
    # Here, not at the top: `heterps run` checks a sync mode's name before torch is imported.
    import torch
    import torch.distributed as dist

    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= replicas
    offset = 0
    for p in params:
        n = p.numel()
        p.grad = flat[offset : offset + n].view_as(p).clone()
        offset += n


@register
class BSP(PipelineSync):
    name = "bsp"
    summary = (
        "exact SGD, repeatable: all-reduce dense gradients every step, synchronous parameter "
        "server; consecutive mini-batches never overlap, so a multi-stage plan runs below "
        "its pipelined estimate"
    )
    ps_synchronous = True

    def sync_dense(self, params: Sequence[torch.nn.Parameter], group: Any, replicas: int) -> None:
        all_reduce_mean(params, group, replicas)


@register
class AsyncPS(PipelineSync):
    name = "async"
    summary = (
        "all-reduce dense gradients every step; asynchronous PS; embedding-only stages run "
        "one mini-batch ahead: the overlapped pipeline the plan's estimate assumes (HeterPS)"
    )
    ps_synchronous = False
    flushes = False

    def sync_dense(self, params: Sequence[torch.nn.Parameter], group: Any, replicas: int) -> None:
        all_reduce_mean(params, group, replicas)

    def run_ahead(self, has_dense: bool) -> int:
        # HeterPS's CPU stage keeps feeding the next stage while gradients come back. Only a
        # stage without dense weights may: an update would invalidate the graph in flight.
        return 0 if has_dense else 1
