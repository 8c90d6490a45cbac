"""A drain's step: one step every stage agrees to stop at, whatever it had started.

Every stage must checkpoint at the same step (a resume is exact only from one step), and a
stage decides at the start of each round whether the round ends the run. The launcher
(drain.py) offers a step (`control/stop_at`), placed past the furthest step any stage had
started by a lead that covers the time until every stage reads it. Each stage's heartbeat
thread publishes `progress/RANK`: the step its stage started last and, for the newest
offer it heard, the step its stage had started when it heard it (`then`). The offer and
`then` are swapped under one lock with the stage loop's `starting`, so `then` below the
offer is a promise: every later round start sees the offer, and the stage stops there.
`then` at or past it means the stage is already past it (it cannot go back).

The launcher confirms an offer every stage promised (`control/stop_agreed`) and offers a
later one, with twice the lead, when one could not promise: no stage stops at a step
another passed. A stage that reaches the offer before it is confirmed waits there for the
confirmation or a later offer (short and rare: the lead covers the answers, about one
heartbeat interval).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from heterps_core import rendezvous as keys
from heterps_core.runtime.metrics import StoreLike

POLL_S = 0.02
AGREE_TIMEOUT_S = 120.0  # no answer this long at the offered step: the launcher is wedged


@dataclass(frozen=True)
class Progress:
    """What one stage's heartbeat thread publishes (`progress/RANK`)."""

    started: int | None  # the boundary step of the newest round it started (None: none yet)
    heard: int | None = None  # the newest drain step offered that it heard
    then: int | None = None  # `started` when it heard it

    def to_json(self) -> str:
        return json.dumps({"started": self.started, "heard": self.heard, "then": self.then})

    @classmethod
    def from_json(cls, text: str | bytes) -> Progress:
        data = json.loads(text)
        return cls(data["started"], data["heard"], data["then"])

    def answer(self, offer: int) -> bool | None:
        """True: the stage will stop at `offer`; False: it is past it; None: not heard yet."""
        if self.heard != offer:
            return None
        return self.then is None or self.then < offer


def read_progress(store: StoreLike, rank: int) -> Progress | None:
    key = keys.progress(rank)
    return Progress.from_json(store.get(key)) if store.check([key]) else None


class StopPoint:
    """A stage's side, shared by its loop (`stops_here`) and its heartbeat thread (`hear`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: int | None = None
        self._offer: int | None = None
        self._then: int | None = None

    def hear(self, offer: int | None) -> Progress:
        """Heartbeat thread: the launcher's newest offer (None: none yet); what to publish."""
        with self._lock:
            if offer is not None and offer != self._offer:
                self._offer, self._then = offer, self._started
            return Progress(self._started, self._offer, self._then)

    def _starting(self, boundary: int) -> int | None:
        with self._lock:
            self._started = boundary
            return self._offer

    def _offer_now(self) -> int | None:
        with self._lock:
            return self._offer

    def stops_here(self, boundary: int, store: StoreLike) -> bool:
        """Stage loop, at the start of the round that ends at step `boundary`: whether the
        run stops there (every stage checkpoints at that step and ends)."""
        offer = self._starting(boundary)
        if offer is None or boundary != offer:
            # Before the offer: a later round start decides. Past it: its heartbeat said so
            # (`then` >= offer), so the launcher offers a later step and never confirms this.
            return False
        deadline = time.monotonic() + AGREE_TIMEOUT_S
        while time.monotonic() < deadline:
            if store.check([keys.STOP_AGREED]) and int(store.get(keys.STOP_AGREED)) == offer:
                return True
            if self._offer_now() != offer:
                return False  # a later step was offered: a stage was past this one
            time.sleep(POLL_S)
        raise RuntimeError(f"the drain step {offer} was offered but neither confirmed nor "
                           f"replaced within {AGREE_TIMEOUT_S:g} s")
