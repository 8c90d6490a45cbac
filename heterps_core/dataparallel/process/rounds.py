"""The process backend's rounds: a worker's plan, steps, push and all-reduce, as messages.

What the server decides is `state.ServerState`'s; this module turns a worker's messages into
its calls and answers with a `PlanReply`. It remembers, per worker, the staleness and the
server version of its running round, and gathers the all-reduce of a collective round until
every worker has reported its wait and one the mean.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from heterps_core.dataparallel.process.messages import (
    Collective,
    PlanReply,
    Push,
    Step,
    dense,
    pack,
)
from heterps_core.dataparallel.state import ServerState


class Rounds:
    """The workers' rounds on `state`; `send(worker, message)` answers a worker and `now()`
    is the run's clock."""

    def __init__(self, state: ServerState, workers: int, send: Callable[[int, object], None],
                 now: Callable[[], float]) -> None:
        self.state = state
        self.workers = workers
        self.send = send
        self.now = now
        self.round_staleness = [0] * workers
        self.pulled_version = [0] * workers
        self.arrived: dict[int, float] = {}  # worker -> its wait in the running all-reduce
        self.collective_mean: torch.Tensor | None = None

    def start(self, w: int) -> None:
        # A worker still inside an all-reduce the server has not seen complete waits for it.
        state = self.state
        admitted = state.admit(self.now(), w, busy=w in self.arrived)
        if admitted is None:
            return
        plan, staleness = admitted
        self.round_staleness[w] = staleness
        self.pulled_version[w] = state.version
        pull = pack(state.theta, state.stale[w])
        state.stale[w] = False
        state.summaries[w].bytes_received += pull.nbytes
        if plan.collective:
            state.busy.add(w)
        compressor = state.mode.compressor
        sizes = state.batch_sizes
        self.send(w, PlanReply(
            local_steps=plan.local_steps, collective=plan.collective,
            compress=plan.compress and compressor is not None,
            topk_ratio=compressor.ratio if compressor else 1.0,
            error_feedback=compressor.error_feedback if compressor else False,
            batch_size=sizes[w], share=sizes[w] / sum(sizes), pull=pull,
        ))

    def step(self, step: Step) -> None:
        self.state.step(step.worker, self.now(), step.step_time_s, step.batch_size, step.loss,
                        self.round_staleness[step.worker])

    def push(self, push: Push) -> None:
        w = push.worker
        self.state.summaries[w].bytes_sent += push.nbytes
        self.state.push(w, self.now(), dense(push.update), push.nbytes, self.pulled_version[w],
                        self.round_staleness[w], push.compressed)
        self.retry_blocked()

    def collective(self, done: Collective) -> None:
        self.arrived[done.worker] = done.wait_s
        if done.mean is not None:
            self.collective_mean = dense(done.mean)
        if len(self.arrived) < self.workers or self.collective_mean is None:
            return
        waits = [self.arrived[v] for v in range(self.workers)]
        self.state.all_reduced(self.now(), self.collective_mean, waits)  # gloo's ring
        self.arrived.clear()
        self.collective_mean = None
        self.retry_blocked()

    def retry_blocked(self) -> None:
        for other in sorted(self.state.blocked_since):
            self.start(other)
