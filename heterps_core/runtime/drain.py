"""A spot notice, on the launcher's side: drain the job to a final checkpoint.

SIGTERM on the coordinator (the CLI's main thread) or an agent's `control/drain` key (its
machine got the notice) asks for a drain. The launcher then offers a step in whole rounds
(`control/stop_at`), far enough past the furthest step any stage started
(`liveness.drain_step`, from the stages' own `progress/RANK`: the metrics lag a report
interval and the first stage runs ahead of them) that every stage answers it in time. Once
every stage promised to stop there it confirms it (`control/stop_agreed`); a stage already
past it makes it offer a later one (stopping.py). Every stage checkpoints at the agreed
step and ends like a finished run.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Collection

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.runtime.liveness import BEAT_S, drain_step
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.stopping import Progress, read_progress

# The stages' progress moves once a heartbeat: their speed is read over two at least.
SPEED_WINDOW_S = 2 * BEAT_S


class Drain:
    """`reason` once a drain is asked for; `offer` the step offered last; `stop_at` once
    every stage agreed to stop there."""

    def __init__(self, spec: JobSpec, wake: Callable[[], None] = lambda: None) -> None:
        self.spec = spec
        self.reason: str | None = None
        self.offer: int | None = None
        self.stop_at: int | None = None
        # Offers placed from a known speed that a stage was past: each doubles the lead. One
        # placed before any speed is known (4 rounds) is a guess, and does not count.
        self.tries = 0
        self._wake = wake  # the launcher blocks between its checks: a request wakes it
        self._first: tuple[float, int] | None = None  # (time, furthest step) at the request
        self._speed_known = False  # the newest offer was placed from a measured speed
        self._stages = [r.rank for r in spec.ranks if r.role == "stage"]

    @property
    def pending(self) -> bool:
        """Asked for and not agreed yet: the launcher checks often until it is."""
        return self.reason is not None and self.stop_at is None

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

    def poll(self, store: dist.Store, throughput: Callable[[], float | None],
             exited: Collection[int] = ()) -> None:
        """Once asked (here or by an agent), offer a step, then confirm it or offer a later
        one as the stages answer. `throughput` (the run's samples/s in its metrics; None
        before two finished mini-batches) and the stages' own progress give the speed."""
        if self.stop_at is not None:
            return
        if self.reason is None and store.check([keys.DRAIN]):
            self.reason = store.get(keys.DRAIN).decode()
        if self.reason is None:
            return
        # A stage that ended finished the run: it is past any step but the last.
        end = self.spec.train.steps
        progress = {rank: Progress(end, self.offer, end) if rank in exited
                    else read_progress(store, rank) for rank in self._stages}
        furthest = max([self.spec.start_step] + [p.started for p in progress.values()
                                                 if p is not None and p.started is not None])
        if self._first is None:
            self._first = (time.monotonic(), furthest)
        if self.offer is None:
            self._offer(store, furthest, throughput)
            return
        answers = [p.answer(self.offer) if p is not None else None for p in progress.values()]
        if False in answers:
            self._offer(store, furthest, throughput)  # a stage is past it: a later step
        elif all(answers):
            self._agree(store, self.offer)

    def _offer(self, store: dist.Store, furthest: int,
               throughput: Callable[[], float | None]) -> None:
        samples_per_s = throughput() or 0.0
        steps_per_s = samples_per_s / self.spec.train.batch_size
        assert self._first is not None
        since, first = self._first
        elapsed = time.monotonic() - since
        if elapsed >= SPEED_WINDOW_S:  # the stages' own speed since the request
            steps_per_s = max(steps_per_s, (furthest - first) / elapsed)
        if self.offer is not None and self._speed_known:
            self.tries += 1  # the previous offer, placed from a known speed, was passed
        self._speed_known = steps_per_s > 0
        self.offer = drain_step(furthest, steps_per_s, self.spec, tries=self.tries)
        store.set(keys.STOP_AT, str(self.offer))
        if self.offer >= self.spec.train.steps:
            # The run's end: every stage checkpoints at its last step anyway (checkpoint_due).
            self._agree(store, self.offer)

    def _agree(self, store: dist.Store, step: int) -> None:
        store.set(keys.STOP_AGREED, str(step))
        self.stop_at = step
