"""A spot notice, on the launcher's side: drain the job to a final checkpoint.

SIGTERM on the coordinator (the CLI's main thread) or an agent's `control/drain` key (its
machine got the notice) asks for a drain; the launcher then sets `control/stop_at`, a step
in whole rounds far enough ahead (`liveness.drain_step`) that every stage learns it in
time, and every stage checkpoints there and ends like a finished run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.runtime.liveness import drain_step
from heterps_core.runtime.spec import JobSpec


class Drain:
    """`reason` once a drain is asked for; `stop_at` once the step is set in the store."""

    def __init__(self, spec: JobSpec, wake: Callable[[], None] = lambda: None) -> None:
        self.spec = spec
        self.reason: str | None = None
        self.stop_at: int | None = None
        self._wake = wake  # the launcher blocks between its checks: a request wakes it

    def request(self, reason: str) -> None:
        """Ask for a drain (safe in a signal handler); the first reason is kept."""
        self.reason = self.reason or reason
        self._wake()

    def on_sigterm(self) -> Callable[[], None]:
        """In the main thread (the CLI), SIGTERM drains the job; returns the undo."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = signal.signal(
            signal.SIGTERM, lambda *_: self.request("the coordinator got SIGTERM")
        )

        def restore() -> None:
            signal.signal(signal.SIGTERM, previous)

        return restore

    def poll(
        self, store: dist.Store, step: int, throughput: Callable[[], float | None]
    ) -> None:
        """Once asked (here or by an agent), set the step every stage stops at, once;
        `throughput` (the run's steady samples/s so far) is read only then. Until it is
        known (two finished mini-batches seen) the step waits: the metrics arrive every
        report interval, and a stage that started a moment ago may be dozens of steps past
        what they said (a job forked from the template trains within a second)."""
        if self.stop_at is not None:
            return
        if self.reason is None and store.check([keys.DRAIN]):
            self.reason = store.get(keys.DRAIN).decode()
        if self.reason is None:
            return
        samples_per_s = throughput()
        if samples_per_s is None:
            return
        self.stop_at = drain_step(step, samples_per_s / self.spec.train.batch_size, self.spec)
        store.set(keys.STOP_AT, str(self.stop_at))
