"""The sweeper: no record stays running, cancelling or queued for a dead worker or a lost
message. It runs at server start-up and every WORK_SWEEP_S in the server (embedded mode) and
in every Celery worker's main process (production); sweeps are idempotent, so several
sweepers at once only repeat each other.

- running / cancelling with a dead lease -> `services.recover_lost` (start over, cancelled,
  or "failed: worker lost at step N");
- queued: at an embedded start-up every queued record is enqueued again (the in-memory
  broker died with the old process); with Redis, a record queued for WORK_REQUEUE_S whose
  message is neither waiting in its queue nor held unacknowledged by a worker is enqueued
  again (Redis restarted without its data; the lease turns any duplicate away).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from webapp.background import broker, kinds, leases, services
from webapp.background.models import Status, Work

log = logging.getLogger(__name__)

_started = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()

# Sweeps of apps above this one, registered when they load (the jobs app's managed recovery:
# a run a spot notice stopped is resumed once its types have capacity again). Each returns
# what it did, like `sweep`, and must be idempotent too.
EXTRA: list[Callable[[], dict[str, int]]] = []


def also(extra: Callable[[], dict[str, int]]) -> None:
    """Run `extra` after every sweep of this process (once, however often registered)."""
    if extra not in EXTRA:
        EXTRA.append(extra)


def sweep(startup: bool = False) -> dict[str, int]:
    """One pass; returns what it did ({"failed": 1, "requeued": 2, ...})."""
    done: Counter[str] = Counter()
    for work_id in Work.objects.filter(status__in=services.ACTIVE).values_list("pk", flat=True):
        with transaction.atomic():
            work = Work.objects.select_for_update().filter(pk=work_id).first()
            if work is None or work.status not in services.ACTIVE or leases.alive(work):
                continue
            outcome = services.recover_lost(work, requeue=True)
            done["requeued" if outcome == "retry" else outcome] += 1
    for work in _lost_messages(startup):
        try:
            services.enqueue(work)
            done["requeued"] += 1
        except services.BrokerUnavailable:
            done["broker down"] += 1
    for extra in EXTRA:
        try:
            done.update(extra())
        except Exception:  # one app's sweep must not stop the work records' recovery
            log.warning("sweeper: %s failed", getattr(extra, "__qualname__", extra),
                        exc_info=True)
    if done:
        log.warning("sweeper: %s", ", ".join(f"{n} {what}" for what, n in sorted(done.items())))
    return dict(done)


def start_periodic() -> bool:
    """Start the sweeping thread of this process once; False if it already runs."""
    global _thread
    with _started:
        if _thread is not None and _thread.is_alive():
            return False
        _stop.clear()
        _thread = threading.Thread(target=_loop, name="work-sweeper", daemon=True)
        _thread.start()
    return True


def stop_periodic() -> None:
    _stop.set()


def _loop() -> None:
    interval = float(settings.WORK_SWEEP_S)
    while not _stop.wait(interval):
        try:
            close_old_connections()
            sweep()
        except Exception:  # database or broker away: try again next time
            log.warning("sweep failed", exc_info=True)
        finally:
            connection.close()


def _lost_messages(startup: bool) -> list[Work]:
    queued = Work.objects.filter(status=Status.QUEUED).order_by("created_at", "pk")
    if settings.MODE.embedded_worker:
        # The in-memory broker lives and dies with this process: at start-up every queued
        # record's message is gone; later none can be lost.
        return list(queued) if startup else []
    old = queued.filter(created_at__lt=timezone.now() - timedelta(
        seconds=float(settings.WORK_REQUEUE_S)))
    candidates = list(old[:500])
    if not candidates:
        return []
    held = _ids_in_redis({*kinds.QUEUES, *(work.queue for work in candidates if work.queue)})
    return [work for work in candidates if work.pk not in held]


def _ids_in_redis(queues: set[str]) -> set[int]:
    """Work ids of the run_work messages Redis holds: waiting in a queue or unacknowledged."""
    app = broker.app()
    with app.connection_for_read() as conn:
        client = conn.default_channel.client
        raw = [m for queue in sorted(queues) for m in client.lrange(queue, 0, -1)]
        raw += [json.dumps(json.loads(v)[0]) for v in client.hvals("unacked")]
    ids = set()
    for message in raw:
        try:
            headers = json.loads(message).get("headers", {})
            if headers.get("task") == services.TASK_NAME:
                ids.add(int(str(headers.get("argsrepr", "")).strip("[]() ,")))
        except (ValueError, TypeError, AttributeError):
            continue
    return ids
