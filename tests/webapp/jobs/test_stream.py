"""The job page's live stream through the real ASGI app: a real multi-process runtime run
behind it, every sample reaching a viewer's websocket, and a cancel stopping the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from webapp.asgi import application
from webapp.background import services as work_services
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _in_a_worker_thread(func: Any) -> Any:
    # Like the Celery worker: not the thread the consumers' database calls share.
    return sync_to_async(func, thread_sensitive=False)


async def _socket(client: Any, user: Any, job: Job) -> WebsocketCommunicator:
    await client.aforce_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return WebsocketCommunicator(application, f"/ws/jobs/work/{job.work_id}/",
                                 headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])


async def _events_until_finished(socket: WebsocketCommunicator) -> list[dict[str, Any]]:
    events = []
    while True:
        work = (await socket.receive_json_from(timeout=60))["work"]
        events.append(work)
        if work["finished"]:
            return events


async def test_a_viewer_sees_every_runtime_sample_live(client: Any, personas: Any,
                                                       source: Any) -> None:
    job = await database_sync_to_async(services.approve)(personas.member, source,
                                                         RunOptions(steps=8))
    socket = await _socket(client, personas.viewer, job)
    assert (await socket.connect())[0]
    first = (await socket.receive_json_from(timeout=5))["work"]
    assert first["status"] == "queued"
    run = asyncio.create_task(_in_a_worker_thread(work_services.run_work)(job.work_id))
    events = await _events_until_finished(socket)
    await run
    await socket.disconnect()
    assert events[-1]["status"] == "succeeded", events[-1]["error"]
    streamed = [e["metrics"]["step"] for e in events if "step" in e["metrics"]]
    stored = [m.step async for m in JobMetric.objects.filter(job=job).order_by("elapsed_s")]
    assert streamed[-1] == 8 and set(stored) <= set(streamed) | {0}
    assert streamed == sorted(streamed)


async def test_cancelling_from_the_page_stops_the_runtime(
    client: Any, async_client: Any, personas: Any, source: Any
) -> None:
    job = await database_sync_to_async(services.approve)(personas.member, source,
                                                         RunOptions(steps=4000))
    socket = await _socket(client, personas.member, job)
    assert (await socket.connect())[0]
    run = asyncio.create_task(_in_a_worker_thread(work_services.run_work)(job.work_id))
    while "step" not in (await socket.receive_json_from(timeout=60))["work"]["metrics"]:
        pass  # wait until the runtime reports, so the cancel hits a running job
    await async_client.aforce_login(personas.member)
    response = await async_client.post(f"/jobs/{job.pk}/cancel/")
    assert response.status_code == 302
    events = await _events_until_finished(socket)
    await run
    await socket.disconnect()
    assert events[-1]["status"] == "cancelled"
    job = await Job.objects.aget(pk=job.pk)
    assert job.last_step < 4000 and "run cancelled at step" in job.log


@pytest.mark.parametrize("removed", [False, True])
async def test_a_sample_reaches_members_only(client: Any, personas: Any, source: Any,
                                             removed: bool) -> None:
    from heterps_core.progress import Progress
    from webapp.projects.models import Membership

    job = await database_sync_to_async(services.approve)(personas.member, source,
                                                         RunOptions(steps=8))
    socket = await _socket(client, personas.viewer, job)
    assert (await socket.connect())[0]
    await socket.receive_json_from(timeout=5)
    if removed:
        await Membership.objects.filter(user=personas.viewer).adelete()
    sample = Progress(2, 8, "step 2/8", {"step": 2, "total_steps": 8, "samples_per_s": 9.5})
    await database_sync_to_async(services.publish_sample)(personas.project.pk, job.work_id,
                                                          sample)
    if removed:
        assert await socket.receive_output(timeout=5) == {"type": "websocket.close",
                                                          "code": 4404}
    else:
        work = (await socket.receive_json_from(timeout=5))["work"]
        assert (work["metrics"]["step"], work["status"], work["progress"]) == (2, "running",
                                                                               0.25)
        await socket.disconnect()
