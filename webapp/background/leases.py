"""Leases on running work: who runs a record, and whether that attempt is still alive.

Claiming a record writes its `lease_owner` (`host:pid:token`) and `heartbeat_at`. While the
kind runs, a heartbeat thread refreshes `heartbeat_at` every WORK_HEARTBEAT_S and passes a
cancel on to the kind; progress reports refresh it too. A lease is dead once it has not been
refreshed for WORK_LEASE_S, or at once when its owner ran on this host and that process is
gone (a killed Celery pool child, a killed server). A dead lease is what the sweeper and a
redelivered task recover; a live one turns a second delivery away, so two attempts never run
one record at the same time.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from datetime import datetime, timedelta
from types import TracebackType

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from webapp.background.context import StopReason, WorkContext
from webapp.background.models import Status, Work

log = logging.getLogger(__name__)

# The attempts running in this process, by work id: shutdown stops them all.
_LOCAL: dict[int, tuple[str, WorkContext]] = {}
_LOCAL_LOCK = threading.Lock()
# Set once this process shuts down (the embedded server's first signal): no attempt starts
# here any more, and one that registers after the stop is told to stop at once.
_CLOSING = threading.Event()


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def lease_s() -> float:
    return float(settings.WORK_LEASE_S)


def expired_before(now: datetime | None = None) -> datetime:
    """Heartbeats older than this belong to dead leases."""
    return (now or timezone.now()) - timedelta(seconds=lease_s())


def alive(work: Work, now: datetime | None = None) -> bool:
    if not work.lease_owner or work.heartbeat_at is None:
        return False
    if work.heartbeat_at < expired_before(now):
        return False
    return not owner_is_gone(work.lease_owner)


def owner_is_gone(owner: str) -> bool:
    """True only when we can tell for sure: the owner ran on this host and its process has
    ended (or it was this process and the attempt is no longer running here)."""
    host, _, rest = owner.partition(":")
    pid_text, _, _ = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        with _LOCAL_LOCK:
            return all(running_owner != owner for running_owner, _ in _LOCAL.values())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process now holds the pid
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def stop_local(reason: str = StopReason.SHUTDOWN) -> int:
    """Ask every attempt running in this process to stop; returns how many there were."""
    with _LOCAL_LOCK:
        running = [ctx for _, ctx in _LOCAL.values()]
    for ctx in running:
        ctx.request_stop(reason)
    return len(running)


def close_local() -> int:
    """This process is shutting down: take no more work (`closing`), and ask every attempt
    running here to stop; returns how many there were."""
    _CLOSING.set()
    return stop_local()


def closing() -> bool:
    return _CLOSING.is_set()


def running_here() -> list[int]:
    with _LOCAL_LOCK:
        return sorted(_LOCAL)


class Heartbeat:
    """Context manager around one attempt: registers it for shutdown and keeps its lease.

    Each beat refreshes the lease if this attempt still owns it (otherwise the kind is told
    to stop: another attempt took over) and passes a requested cancel on to the kind."""

    def __init__(self, ctx: WorkContext, owner: str) -> None:
        self.ctx = ctx
        self.owner = owner
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-work-{ctx.work_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        with _LOCAL_LOCK:
            _LOCAL[self.ctx.work_id] = (self.owner, self.ctx)
            if _CLOSING.is_set():  # claimed while `close_local` ran: it missed this one
                self.ctx.request_stop(StopReason.SHUTDOWN)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join(5)
        with _LOCAL_LOCK:
            if _LOCAL.get(self.ctx.work_id, ("", None))[0] == self.owner:
                del _LOCAL[self.ctx.work_id]

    def _run(self) -> None:
        interval = float(settings.WORK_HEARTBEAT_S)
        try:
            while not self._done.wait(interval):
                self.beat()
        finally:
            connection.close()

    def beat(self) -> None:
        try:
            close_old_connections()
            owned = Work.objects.filter(pk=self.ctx.work_id, lease_owner=self.owner)
            if owned.update(heartbeat_at=timezone.now()):
                if owned.filter(status=Status.CANCELLING).exists():
                    self.ctx.request_stop(StopReason.CANCELLED)
                return
            # Lost only if the record says so: a row this connection cannot see yet (the
            # claim not committed, as inside a test's transaction) proves nothing.
            holder = Work.objects.filter(pk=self.ctx.work_id).values_list(
                "lease_owner", flat=True).first()
            if holder is not None and holder != self.owner:
                self.ctx.request_stop(StopReason.LEASE_LOST)
        except Exception:  # the database is away: the lease lapses, the sweeper decides
            log.warning("heartbeat of work %s failed", self.ctx.work_id, exc_info=True)
            connection.close()
