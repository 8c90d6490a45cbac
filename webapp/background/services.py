"""Background-work rules: start, run, report progress, cancel, recover. Views, the API,
consumers, the Celery task and the sweeper all come through here.

Progress reaches browsers through the channel layer, and only after the database commit
(`transaction.on_commit`): a client that reloads on an event must find at least that state.

Every running record has a lease (`leases`): the attempt that claimed it refreshes it; a
delivery that finds a live lease does nothing, one that finds a dead lease recovers the
record (`recover_lost`): start over for kinds that may (`WorkKind.retryable`), otherwise
"failed: worker lost at step N". Cancel always finishes: a record nobody runs any more is
cancelled at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import APIException

from heterps_core.errors import HeterPSError
from heterps_core.progress import Progress
from webapp.background import broker, events, kinds, leases
from webapp.background.context import LeaseLost, StopReason, WorkCancelled, WorkContext
from webapp.background.models import Status, Work
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check, check_references

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)
EVENT_TYPE = events.WORK_STATUS
TASK_NAME = "heterps.run_work"
ACTIVE = (Status.RUNNING, Status.CANCELLING)

class BrokerUnavailable(APIException):
    """The task broker did not take the work: the record is failed, the caller told so."""

    status_code = 503
    default_code = "broker_unavailable"
    default_detail = "The task queue is not reachable right now; nothing was started."


def start_work(
    user: AnyUser, project: Project, kind: str, params: Any, *, by_owner: bool = False
) -> Work:
    """Validate, record and enqueue one piece of work; members and owners only. Raises
    BrokerUnavailable (HTTP 503) when the broker refuses it; the record is then failed.
    A kind with `started_by` is refused unless `by_owner` (its app's service calls)."""
    check(user, project, Action.EDIT)
    work_kind = kinds.get(kind)
    if not isinstance(params, dict):  # every kind's parameters are named
        raise ValidationError({"params": "must be a JSON object (the kind's parameters by "
                                         "name)"})
    # References first: a foreign id gets the missing-id answer whatever the kind.
    check_references(project, params, work_kind.references)
    if work_kind.started_by and not by_owner:
        raise ValidationError({"kind": f"{kind} work is not started directly: "
                                       f"{work_kind.started_by}. Nothing was started."})
    clean = work_kind.clean_params(params)
    with transaction.atomic():
        # `check` let only a member through: a signed-in user.
        work = Work.objects.create(project=project, kind=kind, params=clean,
                                   created_by=cast("User", user),
                                   queue=work_kind.queue)
        transaction.on_commit(lambda: _enqueue_or_fail(work.pk, work_kind.queue))
    return work


def run_work(work_id: int) -> None:
    """The body of the Celery task. Idempotent: a finished record, or one another attempt
    runs under a live lease, is left alone; one whose attempt died is recovered. In a
    process shutting down (`leases.closing`) nothing starts: the record stays queued, and
    the next start-up sweep enqueues it again."""
    if leases.closing():
        log.info("work %s not started: this process is shutting down", work_id)
        return
    owner = leases.new_owner()
    work = _claim(work_id, owner)
    if work is None:
        return
    ctx = WorkContext(
        work_id=work_id, project_id=work.project_id, user_id=work.created_by_id,
        params=work.params, attempt=work.attempt,
        report=lambda p: report_progress(work_id, p, owner),
        quiet=lambda p: report_progress(work_id, p, owner, publish=False),
    )
    kind = kinds.get(work.kind)
    with leases.Heartbeat(ctx, owner):
        try:
            result = kind.run(ctx)
        except Exception as exc:
            _record_failure(ctx, owner, kind, exc)
        else:
            _finish(work_id, owner, Status.SUCCEEDED, result=result, progress=1.0,
                    message="Done.")


def report_progress(work_id: int, progress: Progress, owner: str | None = None,
                    publish: bool = True) -> None:
    """Store progress, refresh the lease and publish (`publish` False: a kind publishes its
    own event); raises WorkCancelled when a cancel was requested, LeaseLost when `owner`
    no longer holds the record."""
    with transaction.atomic():
        row = Work.objects.filter(pk=work_id).values_list("status", "lease_owner").first()
        if row is not None and owner is not None and row[1] != owner:
            raise LeaseLost(StopReason.LEASE_LOST)
        if row is not None and row[0] == Status.CANCELLING:
            raise WorkCancelled(StopReason.CANCELLED)
        Work.objects.filter(pk=work_id).update(
            progress=progress.fraction,
            message=progress.message[:300],
            metrics=progress.metrics,
            step=max(progress.current, 0),
            total_steps=max(progress.total, 0),
            heartbeat_at=timezone.now(),
        )
        if publish:
            _publish_on_commit(work_id)


def cancel_work(user: AnyUser, work: Work) -> Work:
    """Queued work is cancelled at once; running work is asked to stop, and is cancelled at
    once when no live attempt holds it (its worker died)."""
    check(user, work.project_id, Action.EDIT)
    with transaction.atomic():
        work = Work.objects.select_for_update().get(pk=work.pk)
        if work.status == Status.QUEUED:
            _set(work, status=Status.CANCELLED, message="Cancelled before it started.",
                 finished_at=timezone.now())
        elif work.status in ACTIVE and not leases.alive(work):
            _set(work, status=Status.CANCELLED, finished_at=timezone.now(),
                 message=f"Cancelled; its worker had stopped at {_where(work)}.")
        elif work.status == Status.RUNNING:
            _set(work, status=Status.CANCELLING, message="Cancelling...")
    return work


def recover_lost(work: Work, requeue: bool) -> str:
    """Settle a record whose attempt died (call under select_for_update). Returns what it
    became: "cancelled", "failed", or "retry" (`requeue`: queued again and enqueued after
    the commit; otherwise the caller runs the next attempt itself)."""
    kind = kinds.get(work.kind)
    now = timezone.now()
    if work.status == Status.CANCELLING:
        _set(work, status=Status.CANCELLED, finished_at=now,
             message=f"Cancelled; its worker was lost at {_where(work)}.")
        return "cancelled"
    if kind.retryable and work.attempt < settings.WORK_MAX_ATTEMPTS:
        log.warning("work %s (%s): attempt %s lost at %s; starting over", work.pk, work.kind,
                    work.attempt, _where(work))
        if requeue:
            _set(work, status=Status.QUEUED, lease_owner="", heartbeat_at=None,
                 message=f"Worker lost at {_where(work)}; queued to start over.")
            transaction.on_commit(lambda: _enqueue_or_fail(work.pk, _queue(work)))
        return "retry"
    _set(work, status=Status.FAILED, finished_at=now, error=_lost_error(work),
         message="Worker lost.")
    return "failed"


def enqueue(work: Work) -> None:
    """Send a queued record's task again (the sweeper: its message was lost)."""
    _enqueue_or_fail(work.pk, _queue(work))


def state(work: Work) -> events.WorkState:
    """What pages, the API and websocket events show about a record."""
    data: events.WorkState = {
        "id": work.pk,
        "project": work.project_id,
        "kind": work.kind,
        "status": work.status,
        "progress": work.progress,
        "message": work.message,
        "metrics": work.metrics,
        "error": work.error,
        "created_at": _iso(work.created_at),
        "started_at": _iso(work.started_at),
        "finished_at": _iso(work.finished_at),
        "finished": work.finished,
        "queue": _queue(work),
        "waiting": None,
    }
    if work.status == Status.QUEUED:
        data["waiting"] = line = waiting(work)
        data["message"] = work.message or line["message"]
    return data


def waiting(work: Work) -> dict[str, Any]:
    """Where a queued record stands: its place in its queue and what holds that queue."""
    queue = _queue(work)
    earlier = Q(created_at__lt=work.created_at) | Q(created_at=work.created_at, pk__lt=work.pk)
    ahead = Work.objects.filter(earlier, queue=queue, status=Status.QUEUED)
    position = ahead.count() + 1
    running = list(Work.objects.filter(queue=queue, status__in=ACTIVE)
                   .values_list("kind", flat=True)[:20])
    if running:
        held = f"{len(running)} running ({', '.join(sorted(set(running)))})"
        message = f"Waiting in the {queue} queue: #{position} in line, behind {held}."
    else:
        message = f"Waiting in the {queue} queue: #{position} in line, for a free worker."
    return {"position": position, "running": len(running), "message": message}


def group_name(work_id: int) -> str:
    return f"work-{work_id}"


def _claim(work_id: int, owner: str) -> Work | None:
    with transaction.atomic():
        work = Work.objects.select_for_update().filter(pk=work_id).first()
        if work is None or work.finished:
            return None
        if work.status in ACTIVE:
            if leases.alive(work):
                log.info("work %s is running under %s; this delivery is a duplicate",
                         work_id, work.lease_owner)
                return None
            if recover_lost(work, requeue=False) != "retry":
                return None
        now = timezone.now()
        again = work.attempt > 0
        _set(work, status=Status.RUNNING, started_at=now, progress=0.0, step=0, error="",
             attempt=work.attempt + 1, lease_owner=owner, heartbeat_at=now,
             message=f"Started again (attempt {work.attempt + 1})." if again else "Started.")
    return work


def _record_failure(ctx: WorkContext, owner: str, kind: kinds.WorkKind, exc: Exception) -> None:
    """The outcome of a kind that raised: by its stop reason first (a stopped kind may
    fail in many ways), then by the exception."""
    work_id = ctx.work_id
    reason = ctx.stop_reason if ctx.cancelled() else ""
    if reason == StopReason.LEASE_LOST:
        log.warning("work %s: another attempt holds the lease; this one stops", work_id)
    elif reason == StopReason.SHUTDOWN:
        _interrupted(work_id, owner, kind)
    elif reason == StopReason.CANCELLED or isinstance(exc, WorkCancelled):
        _finish(work_id, owner, Status.CANCELLED, message="Cancelled.")
    elif isinstance(exc, HeterPSError):
        _finish(work_id, owner, Status.FAILED, error=str(exc))
    elif isinstance(exc, ValidationError):  # a refusal, not a bug: its message is the error
        log.info("work %s (%s) refused: %s", work_id, kind.name, refusal_text(exc))
        _finish(work_id, owner, Status.FAILED, error=refusal_text(exc))
    else:  # a bug: keep the trace in the log, a sentence on the record
        log.error("work %s (%s) crashed", work_id, kind.name, exc_info=exc)
        _finish(work_id, owner, Status.FAILED,
                error=f"internal error ({type(exc).__name__}: {exc})")


def refusal_text(exc: ValidationError) -> str:
    """A ValidationError as a person reads it: "field: problem; other: problem", or the
    bare messages when it names no field."""
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(messages)}"
                         for field, messages in exc.message_dict.items())
    return " ".join(exc.messages)


def _interrupted(work_id: int, owner: str, kind: kinds.WorkKind) -> None:
    """The server shut down under it: kinds that may start over wait for the next start
    (the start-up sweep enqueues them); the others fail, to be started again by a person."""
    with transaction.atomic():
        work = Work.objects.select_for_update().filter(pk=work_id, lease_owner=owner).first()
        if work is None or work.finished:
            return
        if kind.retryable:
            _set(work, status=Status.QUEUED, lease_owner="", heartbeat_at=None,
                 message=f"Interrupted at {_where(work)} by a server shutdown; it starts "
                         "over when the server is back.")
        else:
            _set(work, status=Status.FAILED, finished_at=timezone.now(), message="Interrupted.",
                 error=f"Interrupted at {_where(work)}: the server shut down. Start it again.")


def _finish(work_id: int, owner: str, status: str, **fields: Any) -> None:
    with transaction.atomic():
        work = Work.objects.select_for_update().filter(pk=work_id).first()
        if work is None or work.finished or work.lease_owner != owner:
            log.warning("work %s: not recording %s, this attempt no longer holds it",
                        work_id, status)
            return
        _set(work, status=status, finished_at=timezone.now(), heartbeat_at=None, **fields)


def _set(work: Work, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(work, name, value)
    work.save(update_fields=list(fields))
    _publish_on_commit(work.pk)


def _where(work: Work) -> str:
    if work.total_steps:
        return f"step {work.step} of {work.total_steps}"
    return "its start" if not work.step else f"step {work.step}"


def _lost_error(work: Work) -> str:
    beat = work.heartbeat_at or work.started_at
    last = f" (last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC)" if beat else ""
    return (f"Worker lost at {_where(work)}{last}: the process running it died. "
            "Start it again.")


def _queue(work: Work) -> str:
    if work.queue:
        return work.queue
    try:
        return kinds.get(work.kind).queue
    except Exception:  # a kind that no longer exists still shows
        return kinds.LONG


def _publish_on_commit(work_id: int) -> None:
    transaction.on_commit(lambda: _publish(work_id))


def _publish(work_id: int) -> None:
    layer = get_channel_layer()
    work = Work.objects.filter(pk=work_id).first()
    if layer is None or work is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(work_id), events.work_status(state(work))
        )
    except Exception:  # progress is advisory; the record in the database is the truth
        log.warning("could not publish progress of work %s", work_id, exc_info=True)


def _enqueue_or_fail(work_id: int, queue: str) -> None:
    app = broker.app()
    try:
        # Nobody waits for the task's result (the record is the result): without
        # ignore_result each send subscribed to the result backend's pub/sub, and after a
        # Redis outage that subscription's reconnect logged "CRITICAL ... The Celery
        # application must be restarted" in the web process.
        app.send_task(TASK_NAME, args=[work_id], queue=queue, ignore_result=True)
    except Exception as exc:
        log.error("could not enqueue work %s on %s: %s", work_id, queue, exc)
        Work.objects.filter(pk=work_id, status=Status.QUEUED).update(
            status=Status.FAILED, finished_at=timezone.now(), message="Not started.",
            error="The task queue (broker) did not answer, so this work was never started: "
                  f"{type(exc).__name__}: {exc}. Try again once /healthz reports the broker ok.",
        )
        _publish(work_id)
        raise BrokerUnavailable() from exc


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None
