"""Liveness across machines: heartbeats of job processes and agents, the launcher's watchdog.

Every job process runs a `Heartbeat` thread on a store connection of its own: it advances
`beat/RANK` every `BEAT_S` and reads the launcher's drain step (`control/stop_at`) for the
stage loop. A thread beats while its process is scheduled and the interpreter is not wedged,
so a beat that stops means the process stopped (SIGSTOP, a frozen machine, a partition),
while a process that waits on a peer keeps beating: the watchdog names the one that stopped,
not the peers left waiting on it. Agents advance `agents/I/beat` from their supervision loop
and set `agents/I/done` before they exit, so an agent that vanished (its machine lost: its
processes die with it) is told from one that finished.

The launcher's `Watchdog` reads the counters and keeps, on its own monotonic clock (no
clock skew between machines), when each last moved.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field

import torch.distributed as dist

from heterps_core import rendezvous as keys

BEAT_S = 0.5
WATCHDOG_S = 10.0  # a job process without a heartbeat this long is named (well within 30 s)
AGENT_TIMEOUT_S = 5.0  # an agent without a heartbeat this long (and not done) is lost


class Heartbeat:
    """Worker side: beats for `rank` and follows the launcher's drain step."""

    def __init__(self, address: str, rank: int, interval_s: float = BEAT_S) -> None:
        self.rank = rank
        self.interval_s = interval_s
        self.stop_at: int | None = None  # set once the launcher asks every stage to end early
        # Its own connection: the main thread's store client is not shared across threads.
        self._store = keys.connect(address)
        self._store.set(keys.where(rank), json.dumps({"pid": os.getpid(),
                                                       "host": socket.gethostname()}))
        self._store.add(keys.beat(rank), 1)
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{rank}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.interval_s)
            try:
                self._store.add(keys.beat(self.rank), 1)
                if self.stop_at is None and self._store.check([keys.STOP_AT]):
                    self.stop_at = int(self._store.get(keys.STOP_AT))
            except (RuntimeError, OSError):
                return  # the coordinator is gone; the main thread finds out on its own


@dataclass
class _Seen:
    value: int
    since: float  # launcher's monotonic time the counter last moved


@dataclass
class Watchdog:
    """Launcher side: how long since each counter last moved (None: never seen)."""

    store: dist.Store
    _seen: dict[str, _Seen] = field(default_factory=dict)

    def age(self, key: str) -> float | None:
        """Seconds since `key` last advanced; None before its first beat."""
        now = time.monotonic()
        if not self.store.check([key]):
            return None
        value = int(self.store.add(key, 0))
        seen = self._seen.get(key)
        if seen is None or seen.value != value:
            self._seen[key] = _Seen(value, now)
            return 0.0
        return now - seen.since


def where_text(store: dist.Store, rank: int) -> str:
    """'pid P on HOST' of a job process (empty before it said)."""
    key = keys.where(rank)
    if not store.check([key]):
        return ""
    where = json.loads(store.get(key))
    return f"pid {where['pid']} on {where['host']}"
