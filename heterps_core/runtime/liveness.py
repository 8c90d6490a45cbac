"""Liveness across machines: heartbeats of job processes and agents, the launcher's watchdog.

Every job process runs a `Heartbeat` thread on a store connection of its own: it advances
`beat/RANK` every `BEAT_S`, and for the stage loop it hears the drain step the launcher
offers (`control/stop_at`) and publishes the stage's progress and answer (`progress/RANK`,
stopping.py). A thread beats while its process is scheduled and the interpreter is not wedged,
so a beat that stops means the process stopped (SIGSTOP, a frozen machine, a partition),
while a process that waits on a peer keeps beating: the watchdog names the one that stopped,
not the peers left waiting on it. Agents advance `agents/I/beat` from their supervision loop
and set `agents/I/done` before they exit, so an agent that vanished (its machine lost: its
processes die with it) is told from one that finished.

The launcher's `Watchdog` reads the counters and keeps, on its own monotonic clock (no
clock skew between machines), when each last moved. It judges processes only once the run
has finished a mini-batch of this attempt (a resumed run starts at its checkpoint's step,
which is not progress): start-up (imports, the process group's connections, loading a
checkpoint) may hold an interpreter far longer, so it has its own limit, `startup_timeout_s`.
A process says its start-up is over with `Heartbeat.up()` (`up/RANK`).
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.provenance import this_host
from heterps_core.runtime.assignment import AgentInfo, agent_of
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.stopping import StopPoint

BEAT_S = 0.5
WATCHDOG_S = 10.0  # a job process without a heartbeat this long is named (well within 30 s)
# Launch to the run's first finished mini-batch: 64-300 s were measured on a loaded machine
# (every process imports torch), so ten minutes leave room before a start-up is called stuck.
STARTUP_TIMEOUT_S = 600.0
AGENT_TIMEOUT_S = 5.0  # an agent without a heartbeat this long (and not done) is lost
POLL_S = 0.02
# A drain's step is this far ahead of the furthest step a stage started (and at least this
# many rounds): every stage should answer it before it gets there (stopping.py).
DRAIN_LEAD_S = 3.0
DRAIN_ROUNDS = 4


class Heartbeat:
    """Worker side: beats for `rank` and answers the launcher's drain step offers."""

    def __init__(self, address: str, rank: int, interval_s: float = BEAT_S) -> None:
        self.rank = rank
        self.interval_s = interval_s
        self.stop = StopPoint()  # the stage loop's side of a drain's step (stopping.py)
        self._up = False  # start-up is over; the thread writes `up/RANK` at its next beat
        # Its own connection: the main thread's store client is not shared across threads.
        self._store = keys.connect(address)
        # `machine`: this machine's identity, to which measured figures are compared.
        self._store.set(keys.where(rank), json.dumps({"pid": os.getpid(),
                                                       "host": socket.gethostname(),
                                                       "machine": this_host()}))
        self._store.add(keys.beat(rank), 1)
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{rank}", daemon=True)
        self._thread.start()

    def up(self) -> None:
        """Start-up is over (the model built, the checkpoint loaded): the process trains or
        serves now. Told through the thread, whose store connection this is."""
        self._up = True

    def _run(self) -> None:
        told_up = False
        while True:
            time.sleep(self.interval_s)
            try:
                self._store.add(keys.beat(self.rank), 1)
                if self._up and not told_up:
                    self._store.set(keys.up(self.rank), "1")
                    told_up = True
                offer = (int(self._store.get(keys.STOP_AT))
                         if self._store.check([keys.STOP_AT]) else None)
                self._store.set(keys.progress(self.rank), self.stop.hear(offer).to_json())
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


class Liveness:
    """The launcher's judgement of heartbeats: a lost machine, a stopped process."""

    def __init__(self, store: dist.Store, spec: JobSpec, watchdog_s: float,
                 heartbeat_timeout_s: float, startup_timeout_s: float = STARTUP_TIMEOUT_S
                 ) -> None:
        self.store = store
        self.spec = spec
        self.watchdog_s = watchdog_s
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.watchdog = Watchdog(store)
        self.agents: list[AgentInfo] = []  # set once the launcher has assigned them
        self._launched: dict[int, float] = {}  # rank -> monotonic time it was started
        self._up: set[int] = set()

    def launched(self, ranks: Collection[int]) -> None:
        """`ranks` were started now (locally, or handed to their agents): their start-up runs."""
        now = time.monotonic()
        for rank in ranks:
            self._launched.setdefault(rank, now)

    def problem(self, exited: Collection[int], trained: bool,
                pids: dict[int, int] | None = None) -> str | None:
        """What is wrong now, as the start of an error message (None: all beat).

        Processes are watched once the run has `trained` (finished a mini-batch of this
        attempt); before, start-up's own timeout applies (`startup_problem`)."""
        for info in self.agents:
            age = self._agent_age(info)
            if age is not None and age > self.heartbeat_timeout_s:
                return self._lost_text(info, age)
        # Read every counter on every call, start-up included: the watchdog learns when a
        # counter last moved only by reading it.
        ages = {r.rank: self.watchdog.age(keys.beat(r.rank))
                for r in self.spec.ranks if r.rank not in exited}
        if not trained:
            return self.startup_problem(ages, pids or {})
        for rank, age in ages.items():
            if age is not None and age > self.watchdog_s:
                return (
                    f"{self._named(rank, pids or {})} stopped making progress: no heartbeat "
                    f"for {age:.1f} s (the process is stopped or frozen; the others were "
                    "waiting on it)"
                )
        return None

    def startup_problem(self, ages: dict[int, float | None], pids: dict[int, int]
                        ) -> str | None:
        """Past the start-up timeout before the run's first mini-batch: the process to blame
        among those running (`ages`: their heartbeats' ages), one still starting (a stopped
        one first, then one that never beat); when every one started, the oldest beat."""
        now = time.monotonic()
        waited = {r: now - t for r, t in self._launched.items() if r in ages}
        late = [r for r, s in waited.items() if s > self.startup_timeout_s]
        if not late:
            return None
        starting = [r for r in late if not self._is_up(r)]

        def blame(r: int) -> tuple[int, float]:
            # A stopped process (its beat stalled) before one that never beat, before the rest.
            age = ages[r]
            if age is None:
                return 1, 0.0
            return (2 if age > self.watchdog_s else 0), age

        rank = max(starting or late, key=blame)
        age = ages[rank]
        if age is None:
            state = "it never sent a heartbeat (its interpreter has not got that far)"
        elif age > self.watchdog_s:
            state = f"no heartbeat for {age:.1f} s (the process is stopped or frozen)"
        else:
            state = "it still beats (busy in its start-up, or waiting on the others)"
        what = "still starting" if starting else "started, but no mini-batch finished"
        return (f"{self._named(rank, pids)} {what} after {waited[rank]:.0f} s (start-up "
                f"timeout {self.startup_timeout_s:g} s): {state}")

    def _is_up(self, rank: int) -> bool:
        if rank not in self._up and self.store.check([keys.up(rank)]):
            self._up.add(rank)
        return rank in self._up

    def _named(self, rank: int, pids: dict[int, int]) -> str:
        """'stage 2 replica 0 (rank 1) (pid P on HOST)': the pid a local process was started
        with when it has not said where it runs yet."""
        where = where_text(self.store, rank) or (f"pid {pids[rank]}" if rank in pids else "")
        return f"{self.spec.ranks[rank].describe()}{f' ({where})' if where else ''}"

    def beats(self) -> dict[int, int]:
        """Every agent's heartbeat counter now (read when a failure is noticed)."""
        return {info.index: int(self.store.add(keys.agent_beat(info.index), 0))
                for info in self.agents}

    def lost_machine(self, before: dict[int, int]) -> str | None:
        """After a failure: the machine that was lost, if one was. Each agent proves alive
        (its counter moves past `before`, or it says it is done) or stays silent past the
        heartbeat timeout; a lost machine is dead by the time its peers fail, so its
        counter stays put."""
        pending = {info.index: info for info in self.agents}
        deadline = time.monotonic() + self.heartbeat_timeout_s + 1.0
        while pending and time.monotonic() < deadline:
            for index, info in list(pending.items()):
                age = self._agent_age(info)
                moved = int(self.store.add(keys.agent_beat(index), 0)) != before[index]
                if age is None or moved:
                    del pending[index]
                elif age > self.heartbeat_timeout_s:
                    return self._lost_text(info, age)
            time.sleep(POLL_S)
        return None

    def _agent_age(self, info: AgentInfo) -> float | None:
        """Seconds since the agent's last heartbeat; None when it ended on purpose."""
        if self.store.check([keys.agent_done(info.index)]):
            return None
        return self.watchdog.age(keys.agent_beat(info.index))

    def _lost_text(self, info: AgentInfo, age: float) -> str:
        ran = ", ".join(self.spec.ranks[r].describe() for r in info.ranks) or "no process"
        return (f"machine {info.name} (agent {info.index}) was lost: no heartbeat for "
                f"{age:.1f} s; it ran {ran}")


def drain_step(furthest: int, steps_per_s: float, spec: JobSpec, tries: int = 0) -> int:
    """The drain step to offer: whole rounds past `furthest` (the furthest step a stage
    started), far enough that every stage answers it (their heartbeat threads poll every
    BEAT_S) before reaching it; the lead doubles with each offer a stage was past (`tries`),
    and the run's end caps it."""
    rounds = spec.round_steps
    lead = max(DRAIN_ROUNDS * rounds, math.ceil(steps_per_s * DRAIN_LEAD_S)) * 2**tries
    return min(rounds * math.ceil((furthest + lead) / rounds), spec.train.steps)


def where_text(store: dist.Store, rank: int) -> str:
    """'machine M, pid P on HOST' of a job process: M the name of the agent that ran it
    (none for the launcher's own ranks), P and HOST once the process said them."""
    agent = agent_of(store, rank)
    parts = [f"machine {agent.name}"] if agent is not None else []
    key = keys.where(rank)
    if store.check([key]):
        where = json.loads(store.get(key))
        parts.append(f"pid {where['pid']} on {where['host']}")
    return ", ".join(parts)
