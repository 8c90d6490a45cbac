"""An agent's line to its coordinator: every store call answers within a bounded time.

A TCPStore call to a machine that dropped off the network does not fail: its packets
vanish, nothing resets the connection, and `check`/`add`/`set` block until TCP itself gives
up, minutes later (the store's timeout bounds only waits for a key: measured across a
veth pair taken down, one `check` on a store connected with a 5 s timeout still blocked
after 118 s). An agent blocked there keeps its job processes running and, under Celery,
holds its worker slot. So the agent makes its calls through `Lifeline.call`: they run on
a thread of their own, and a call without an answer within `patience_s` raises
`CoordinatorLost` ("lost the coordinator H:P: no answer for 10 s"); so does a call that
fails (the coordinator's process is gone). The thread left blocked on the lost call is a
daemon and ends when that call does.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NoReturn, TypeVar

import torch.distributed as dist

from heterps_core.errors import HeterPSError

# The launcher calls an agent lost after liveness.AGENT_TIMEOUT_S (5 s) of silence; an agent
# waits twice that for its coordinator, so a loaded coordinator is not taken for a lost one.
PATIENCE_S = 10.0

T = TypeVar("T")


class CoordinatorLost(HeterPSError):
    """The coordinator stopped answering (or its store went away): the job is over here."""


class Lifeline:
    """`call(fn)` runs `fn(store)` on the line's thread and returns its result, or raises
    `CoordinatorLost` after `patience_s` without an answer. Once lost, every call raises at
    once with the same reason."""

    def __init__(self, store: dist.Store, address: str, patience_s: float = PATIENCE_S) -> None:
        self.address = address
        self.patience_s = patience_s
        self.lost: str | None = None  # why, once the coordinator is lost
        self._store = store
        self._calls: queue.SimpleQueue[tuple[Callable[[Any], Any], Future[Any]] | None] = (
            queue.SimpleQueue())
        self._last_answer = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name="coordinator-line", daemon=True)
        self._thread.start()

    def call(self, fn: Callable[[dist.Store], T]) -> T:
        if self.lost is not None:
            raise CoordinatorLost(self.lost)
        answer: Future[T] = Future()
        self._calls.put((fn, answer))
        try:
            return answer.result(timeout=self.patience_s)
        except FutureTimeout:
            self._lose(f"no answer for {time.monotonic() - self._last_answer:.0f} s")
        except (RuntimeError, OSError) as exc:  # the store's connection broke
            self._lose(_first_line(exc))

    def close(self) -> None:
        """End the line's thread once its current call (if any) returns."""
        self._calls.put(None)

    def _lose(self, why: str) -> NoReturn:
        self.lost = f"lost the coordinator {self.address}: {why}"
        self.close()
        raise CoordinatorLost(self.lost)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, answer = item
            try:
                answer.set_result(fn(self._store))
            except BaseException as exc:
                answer.set_exception(exc)
            self._last_answer = time.monotonic()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
