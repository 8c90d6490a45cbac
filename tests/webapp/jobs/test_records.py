"""A sample is written once (its metric row and the job's totals) and published once,
after the commit, as a typed `job.sample` event; the work record keeps progress only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from heterps_core.progress import Progress
from webapp.asgi import application
from webapp.background import services as work_services
from webapp.background.models import Work
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.records import sample_group
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db(transaction=True)
# The run has ended before the test reads: every message is queued already.
QUIET_S = 1.0


def _received(layer: Any, channel: str) -> list[dict[str, Any]]:
    """Everything queued for `channel` once the run is over, through the layer's own
    `receive` (in-memory or Redis alike): read until nothing more arrives for a while."""

    async def drain() -> list[dict[str, Any]]:
        messages = []
        while True:
            try:
                messages.append(await asyncio.wait_for(layer.receive(channel), QUIET_S))
            except TimeoutError:
                return messages

    return async_to_sync(drain)()


@pytest.mark.slow
def test_a_real_run_stores_and_publishes_each_sample_once(personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    work_id = job.work_id
    assert work_id is not None
    layer = get_channel_layer()
    samples, statuses = (async_to_sync(layer.new_channel)() for _ in range(2))
    async_to_sync(layer.group_add)(sample_group(work_id), samples)
    async_to_sync(layer.group_add)(work_services.group_name(work_id), statuses)
    work_services.run_work(work_id)
    published = _received(layer, samples)
    changes = _received(layer, statuses)
    rows = list(JobMetric.objects.filter(job=job).order_by("elapsed_s"))
    work = Work.objects.get(pk=work_id)
    assert work.status == "succeeded", work.error
    assert rows and len(published) == len(rows)
    assert {m["type"] for m in published} == {"job.sample"}
    assert [m["work"]["metrics"]["step"] for m in published] == [r.step for r in rows]
    assert all(set(m) == {"type", "work", "viewers"} for m in published)
    # The record's own events are its changes of state, never a copy of a sample.
    assert {m["type"] for m in changes} == {"work.status"}
    assert all("step" not in m["work"]["metrics"] for m in changes)
    # A run forked from the warm template may finish 8 steps inside one report interval
    # (one sample), so compare the changes with the states, not with the sample count.
    assert [m["work"]["status"] for m in changes] == ["running", "succeeded"]
    assert work.metrics == {}
    assert (work.step, work.total_steps) == (8, 8)
    job = Job.objects.get(pk=job.pk)
    assert (job.last_step, job.accrued_cost) == (8, pytest.approx(rows[-1].cost))


async def test_the_job_socket_sends_a_sample_without_who_else_may_see_it(
    client: Any, personas: Any, source: Any
) -> None:
    job = await database_sync_to_async(services.approve)(personas.member, source,
                                                         RunOptions(steps=8))
    await client.aforce_login(personas.viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, f"/ws/jobs/work/{job.work_id}/",
                                   headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["type"] == "work.status"
    sample = {"step": 2, "total_steps": 8, "samples_per_s": 9.5}
    await database_sync_to_async(services.publish_sample)(
        personas.project.pk, job.work_id, Progress(2, 8, "step 2/8", sample))
    event = await socket.receive_json_from(timeout=5)
    assert set(event) == {"type", "work"} and event["type"] == "job.sample"
    assert event["work"]["metrics"] == sample
    await socket.disconnect()
