"""The work websocket: current state on connect, events after, permission re-checked on
every event."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from heterps_core.progress import Progress
from webapp.asgi import application
from webapp.background import services
from webapp.background.models import Work
from webapp.projects.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)


async def _socket(client: Any, user: Any, work: Work) -> WebsocketCommunicator:
    await client.aforce_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return WebsocketCommunicator(
        application, f"/ws/work/{work.pk}/",
        headers=[(b"cookie", cookie), (b"origin", b"http://localhost")],
    )


async def test_outsiders_are_refused_like_missing_records(client: Any, personas: Any) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    for path_work in (work, Work(pk=work.pk + 1000)):
        socket = await _socket(client, personas.outsider, path_work)
        assert await socket.connect(timeout=10) == (False, 4404)
        await socket.disconnect()


async def test_a_viewer_sees_progress_live(client: Any, personas: Any) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    socket = await _socket(client, personas.viewer, work)
    connected, _ = await socket.connect(timeout=10)
    assert connected
    assert (await socket.receive_json_from(timeout=5))["work"]["status"] == "queued"
    await database_sync_to_async(services.report_progress)(work.pk, Progress(3, 4, "most"))
    event = await socket.receive_json_from(timeout=5)
    assert (event["work"]["progress"], event["work"]["message"]) == (0.75, "most")
    await socket.disconnect()


async def test_a_removed_member_stops_receiving_at_the_next_event(
    client: Any, personas: Any
) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    socket = await _socket(client, personas.viewer, work)
    assert (await socket.connect(timeout=10))[0]
    await socket.receive_json_from(timeout=5)
    await Membership.objects.filter(user=personas.viewer).adelete()
    await database_sync_to_async(services.report_progress)(work.pk, Progress(1, 4, "secret"))
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4404}
    await socket.disconnect()
