"""Background-work rules: start, run, report progress, cancel. Views, the API, consumers and
the Celery task all come through here.

Progress reaches browsers through the channel layer, and only after the database commit
(`transaction.on_commit`): a client that reloads on an event must find at least that state.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from heterps_core.errors import HeterPSError
from heterps_core.progress import Progress
from webapp.background import kinds
from webapp.background.context import WorkCancelled, WorkContext
from webapp.background.models import Status, Work
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check, check_references

log = logging.getLogger(__name__)
EVENT_TYPE = "work.event"
TASK_NAME = "heterps.run_work"


def start_work(
    user: AbstractBaseUser, project: Project, kind: str, params: Any
) -> Work:
    """Validate, record and enqueue one piece of work; members and owners only."""
    check(user, project, Action.EDIT)
    work_kind = kinds.get(kind)
    check_references(project, params, work_kind.references)
    clean = work_kind.clean_params(params)
    with transaction.atomic():
        work = Work.objects.create(project=project, kind=kind, params=clean, created_by=user)
        transaction.on_commit(lambda: _enqueue(work.pk, work_kind.queue))
    return work


def run_work(work_id: int) -> None:
    """The body of the Celery task. Idempotent: a finished record is left alone, so a
    redelivered message does nothing; a running one (its worker died) starts over."""
    work = _claim(work_id)
    if work is None:
        return
    try:
        ctx = WorkContext(
            work_id=work_id, project_id=work.project_id, user_id=work.created_by_id,
            params=work.params, report=lambda p: report_progress(work_id, p),
        )
        result = kinds.get(work.kind).run(ctx)
    except WorkCancelled:
        _finish(work_id, Status.CANCELLED, message="Cancelled.")
    except HeterPSError as exc:
        _finish(work_id, Status.FAILED, error=str(exc))
    except Exception as exc:  # a bug: keep the trace in the log, a sentence on the record
        log.exception("work %s (%s) crashed", work_id, work.kind)
        _finish(work_id, Status.FAILED, error=f"internal error ({type(exc).__name__}: {exc})")
    else:
        _finish(work_id, Status.SUCCEEDED, result=result, progress=1.0, message="Done.")


def report_progress(work_id: int, progress: Progress) -> None:
    """Store progress and publish it; raises WorkCancelled when a cancel was requested."""
    with transaction.atomic():
        status = Work.objects.filter(pk=work_id).values_list("status", flat=True).first()
        if status == Status.CANCELLING:
            raise WorkCancelled
        Work.objects.filter(pk=work_id).update(
            progress=progress.fraction,
            message=progress.message[:300],
            metrics=progress.metrics,
        )
        _publish_on_commit(work_id)


def cancel_work(user: AnyUser, work: Work) -> Work:
    check(user, work.project_id, Action.EDIT)
    with transaction.atomic():
        work = Work.objects.select_for_update().get(pk=work.pk)
        if work.status == Status.QUEUED:
            _set(work, status=Status.CANCELLED, message="Cancelled before it started.",
                 finished_at=timezone.now())
        elif work.status == Status.RUNNING:
            _set(work, status=Status.CANCELLING, message="Cancelling...")
    return work


def state(work: Work) -> dict[str, Any]:
    """What pages, the API and websocket events show about a record."""
    return {
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
    }


def group_name(work_id: int) -> str:
    return f"work-{work_id}"


def _claim(work_id: int) -> Work | None:
    with transaction.atomic():
        work = Work.objects.select_for_update().filter(pk=work_id).first()
        if work is None or work.finished:
            return None
        if work.status == Status.CANCELLING:
            _set(work, status=Status.CANCELLED, message="Cancelled.", finished_at=timezone.now())
            return None
        _set(work, status=Status.RUNNING, started_at=timezone.now(), progress=0.0,
             message="Started.", error="")
    return work


def _finish(work_id: int, status: str, **fields: Any) -> None:
    with transaction.atomic():
        work = Work.objects.select_for_update().get(pk=work_id)
        _set(work, status=status, finished_at=timezone.now(), **fields)


def _set(work: Work, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(work, name, value)
    work.save(update_fields=list(fields))
    _publish_on_commit(work.pk)


def _publish_on_commit(work_id: int) -> None:
    transaction.on_commit(lambda: _publish(work_id))


def _publish(work_id: int) -> None:
    layer = get_channel_layer()
    work = Work.objects.filter(pk=work_id).first()
    if layer is None or work is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(work_id), {"type": EVENT_TYPE, "work": state(work)}
        )
    except Exception:  # progress is advisory; the record in the database is the truth
        log.warning("could not publish progress of work %s", work_id, exc_info=True)


def _enqueue(work_id: int, queue: str) -> None:
    from workers.app import app

    app.send_task(TASK_NAME, args=[work_id], queue=queue)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None
