"""The background-work service: lifecycle, readable failures, cancel, idempotence, and
progress published only after the database commit."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from heterps_core.progress import Progress
from webapp.background import services
from webapp.background.models import Status, Work
from webapp.projects.permissions import PermissionDenied

TINY = json.loads(
    (Path(__file__).resolve().parents[3] / "webapp/catalogue/demo/tiny-ctr.json").read_text()
)
PARAMS = {"instance": TINY, "assignments": [["cpu", "gpu", "gpu"]]}


def _queued(personas: Any, params: Any = None) -> Work:
    return Work.objects.create(
        project=personas.project, kind="evaluate", params=params or
        {"instance": TINY, "assignments": [["cpu", "gpu", "gpu"], ["gpu"] * 3]},
        created_by=personas.member,
    )


@pytest.mark.django_db
def test_run_work_goes_from_queued_to_succeeded_with_the_result(personas: Any) -> None:
    work = _queued(personas)
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.SUCCEEDED and work.progress == 1.0
    assert work.started_at <= work.finished_at
    assert work.result["best"] == 0
    assert work.result["plans"][0]["cost_per_hour"] == pytest.approx(3.6)
    assert work.error == ""


@pytest.mark.django_db
def test_running_twice_changes_nothing(personas: Any) -> None:
    work = _queued(personas)
    services.run_work(work.pk)
    first = Work.objects.get(pk=work.pk)
    services.run_work(work.pk)  # a redelivered message
    again = Work.objects.get(pk=work.pk)
    assert (again.status, again.finished_at, again.result) == (
        first.status, first.finished_at, first.result)


@pytest.mark.django_db
def test_bad_stored_input_fails_with_a_readable_error(personas: Any) -> None:
    # Written around the service, as an old record or a manual admin edit could be.
    work = _queued(personas, {"instance": TINY | {"throughput_target": 0},
                              "assignments": [["cpu"] * 3]})
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.FAILED
    assert work.error == "throughput_target: must be greater than 0, got 0"


@pytest.mark.django_db
def test_start_work_validates_and_checks_the_role(personas: Any) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(PermissionDenied):
        services.start_work(personas.viewer, personas.project, "evaluate", PARAMS)
    with pytest.raises(ValidationError):
        services.start_work(personas.member, personas.project, "evaluate", {"instance": {}})
    assert not Work.objects.exists()


@pytest.mark.django_db
def test_cancel_before_start_and_during_a_run(personas: Any) -> None:
    queued = _queued(personas)
    services.cancel_work(personas.member, queued)
    services.run_work(queued.pk)
    queued.refresh_from_db()
    assert queued.status == Status.CANCELLED and queued.result is None

    running = _queued(personas)
    # Running under a live lease of a worker on another machine.
    Work.objects.filter(pk=running.pk).update(status=Status.RUNNING, lease_owner="w2:42:x",
                                              heartbeat_at=timezone.now())
    services.cancel_work(personas.member, running)
    assert Work.objects.get(pk=running.pk).status == Status.CANCELLING
    with pytest.raises(services.WorkCancelled):
        services.report_progress(running.pk, Progress(1, 2, "halfway"))

    with pytest.raises(PermissionDenied):
        services.cancel_work(personas.viewer, running)


@pytest.mark.django_db(transaction=True)
async def test_progress_is_published_only_after_the_commit(personas: Any) -> None:
    layer = get_channel_layer()
    work = await Work.objects.acreate(project=personas.project, kind="evaluate", params=PARAMS)
    channel = await layer.new_channel()
    await layer.group_add(services.group_name(work.pk), channel)
    receiver = asyncio.ensure_future(layer.receive(channel))

    @database_sync_to_async
    def report_in_a_transaction() -> bool:
        with transaction.atomic():
            services.report_progress(work.pk, Progress(1, 4, "one of four", {"loss": 0.5}))
            time.sleep(0.3)  # the event loop keeps running; nothing may arrive yet
            return receiver.done()

    assert await report_in_a_transaction() is False
    event = await asyncio.wait_for(receiver, 5)
    assert event["type"] == services.EVENT_TYPE
    assert event["work"]["progress"] == 0.25
    assert event["work"]["message"] == "one of four"
    assert event["work"]["metrics"] == {"loss": 0.5}
    await layer.group_discard(services.group_name(work.pk), channel)


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_refuses_work_fails_the_record_and_the_page_answers_503(
    personas: Any, login: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker itself down is tests/workers/test_faults.py (a real Redis killed); here
    its refusal, for the form path."""
    from workers.app import app

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(app, "send_task", refuse)
    response = login(personas.member).post(
        f"/work/start/evaluate/{personas.project.pk}/",
        {"instance": json.dumps(TINY), "assignments": "cpu,cpu,cpu"})
    assert response.status_code == 503
    assert "task queue is not reachable" in response.content.decode()
    work = Work.objects.get()
    assert work.status == Status.FAILED and "Connection refused" in work.error
