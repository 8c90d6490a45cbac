"""Websocket of the job page and job rows: /ws/jobs/work/<work_id>/.

Two typed events (`background.events`), each from its own group and with its own check:
`work.status` (queued, running, finished, cancelled...: the work consumer's, a database
check per event) and `job.sample` (one per stored sample, from the job's sample group).
The generic check is a query per event and viewer; with a sample every 0.5 s and a hundred
viewers that is 200 queries a second in one thread, and the samples fell seconds behind.
So a sample's delivery carries the project's member ids taken at publication (after the
commit), and each viewer's check is a set lookup, still made on every sample.
"""

from __future__ import annotations

from webapp.background import events
from webapp.background.consumers import CLOSE_NOT_FOUND, WorkConsumer
from webapp.jobs.records import sample_group


class JobConsumer(WorkConsumer):
    async def connect(self) -> None:
        work_id = int(self.scope["url_route"]["kwargs"]["work_id"])
        # Before the state is read (in super), like the work group: no sample is lost.
        await self.channel_layer.group_add(sample_group(work_id), self.channel_name)
        await super().connect()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "work_id"):
            await self.channel_layer.group_discard(sample_group(self.work_id), self.channel_name)
        await super().disconnect(code)

    async def job_sample(self, message: events.SampleDelivery) -> None:
        if self._user().pk not in message["viewers"]:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json(events.for_browser(message))
