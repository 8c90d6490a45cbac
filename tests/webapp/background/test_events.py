"""The websocket events are typed: each carries its `type`, the consumers send them as
built, and a kind that publishes its own event can store progress without a second one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import transaction

from heterps_core.progress import Progress
from webapp.asgi import application
from webapp.background import events, services
from webapp.background.models import Work

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_event_names_its_type_and_carries_the_record(personas: Any) -> None:
    work = Work.objects.create(project=personas.project, kind="evaluate")
    status = events.work_status(services.state(work))
    assert status["type"] == events.WORK_STATUS == services.EVENT_TYPE == "work.status"
    assert set(status["work"]) == set(events.WorkState.__annotations__)
    sample = {"step": 2, "total_steps": 8, "samples_per_s": 9.5}
    event = events.job_sample(personas.project.pk, work.pk, Progress(2, 8, "step 2/8", sample))
    assert event["type"] == events.JOB_SAMPLE == "job.sample"
    assert set(event["work"]) == set(events.WorkView.__annotations__)
    assert (event["work"]["metrics"], event["work"]["progress"], event["work"]["status"]) == (
        sample, 0.25, "running")
    delivery = events.sample_delivery(event, [1, 2])
    assert delivery["viewers"] == [1, 2] and events.for_browser(delivery) == event


async def test_the_work_socket_sends_typed_events(client: Any, personas: Any) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    await client.aforce_login(personas.viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, f"/ws/work/{work.pk}/",
                                   headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])
    assert (await socket.connect(timeout=10))[0]
    first = await socket.receive_json_from(timeout=5)
    assert (first["type"], first["work"]["status"]) == ("work.status", "queued")
    await database_sync_to_async(services.report_progress)(work.pk, Progress(1, 2, "half"))
    event = await socket.receive_json_from(timeout=5)
    assert (event["type"], event["work"]["message"]) == ("work.status", "half")
    await socket.disconnect()


async def test_progress_stored_without_publishing_sends_nothing(personas: Any) -> None:
    layer = get_channel_layer()
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    channel = await layer.new_channel()
    await layer.group_add(services.group_name(work.pk), channel)

    @database_sync_to_async
    def report() -> None:
        with transaction.atomic():
            services.report_progress(work.pk, Progress(1, 4, "quiet"), publish=False)
            services.report_progress(work.pk, Progress(2, 4, "loud"))

    await report()
    event = await asyncio.wait_for(layer.receive(channel), 5)
    assert (event["type"], event["work"]["message"]) == ("work.status", "loud")
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 0.5)
    await layer.group_discard(services.group_name(work.pk), channel)
