"""Websocket of the job page and job rows: /ws/jobs/work/<work_id>/.

The generic work consumer re-checks the viewer's role with a database query on every
event; with a sample every 0.5 s and a hundred viewers that is 200 queries a second in one
thread, and the samples fall seconds behind. Here samples come on their own group with the
list of the project's members taken once at publication (after the commit), so each
viewer's check is a set lookup that is still made on every event. Status changes (queued,
finished, cancelled) still come through the work group with the usual database check.
"""

from __future__ import annotations

from typing import Any

from webapp.background.consumers import CLOSE_NOT_FOUND, WorkConsumer
from webapp.jobs.services import sample_group


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

    async def work_event(self, event: dict[str, Any]) -> None:
        work = event["work"]
        if work["status"] == "running" and "step" in (work.get("metrics") or {}):
            return  # a runtime sample: it arrives on the sample group (job_sample)
        await super().work_event(event)

    async def job_sample(self, event: dict[str, Any]) -> None:
        if self._user().pk not in event["viewers"]:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json({"work": event["work"]})
