"""The embedded default end to end: a page starts work, the in-process Celery worker runs
it, and its progress reaches a websocket through the in-memory channel layer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings

from webapp.asgi import application
from webapp.background.models import Status, Work

TINY = (Path(__file__).resolve().parents[3] / "webapp/catalogue/demo/tiny-ctr.json").read_text()

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not settings.MODE.embedded_worker,
                       reason="the embedded worker needs the in-memory broker (no REDIS_URL)"),
]


@pytest.fixture
def embedded_worker() -> Iterator[Any]:
    from workers import embedded

    worker = embedded.start(concurrency=1)
    yield worker
    worker.stop()


async def test_work_started_from_the_page_runs_in_the_background_and_streams(
    async_client: Any, personas: Any, embedded_worker: Any
) -> None:
    client = async_client
    await client.aforce_login(personas.member)
    response = await client.post(
        f"/work/start/evaluate/{personas.project.pk}/",
        {"instance": TINY, "assignments": "cpu,cpu,cpu\ncpu,gpu,gpu\ngpu,gpu,gpu"},
    )
    assert response.status_code == 302
    work = await Work.objects.aget()
    assert response["Location"] == f"/work/{work.pk}/"

    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, f"/ws/work/{work.pk}/",
                                   headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])
    assert (await socket.connect(timeout=10))[0]
    seen = []
    while True:
        state = (await socket.receive_json_from(timeout=20))["work"]
        seen.append(state)
        if state["finished"]:
            break
    await socket.disconnect()

    assert seen[-1]["status"] == Status.SUCCEEDED
    await work.arefresh_from_db()
    assert work.status == Status.SUCCEEDED
    assert [p["cost_per_hour"] for p in work.result["plans"]] == pytest.approx([4.2, 3.6, 12.0])
    page = await client.get(f"/work/{work.pk}/")
    assert "✓ chosen" in page.content.decode()
    # Events may begin after some progress (the connect state comes first); every one
    # arrives in order.
    progress = [s["progress"] for s in seen]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert json.loads(json.dumps(seen))  # events are plain JSON
