"""The websocket events: one `TypedDict` per event, each with its `type` discriminator, and
the one function that builds it.

The event is both the channel-layer message and what the browser gets: Channels calls the
consumer's handler named after `type` (`work.status` -> `work_status`), the handler checks
the viewer's permission and sends the event on; the page scripts (`static/js/work.js`,
`job.js`, `job_rows.js`, `rltraining.js`) dispatch on `type` too. Nothing tells one event
from another by the keys it happens to carry.

- `WorkStatus` ("work.status"): a background-work record changed (status, progress,
  message, result, error), published by `background.services` after the commit and sent
  by every work consumer on connect; `work` is `services.state(record)`.
- `JobSample` ("job.sample"): one sample of a job's run, published once by
  `jobs.records.store_sample` after the commit that stored it; `work` is the run's record
  as of that sample, its `metrics` the sample. Delivered with the ids of the project's
  members at that moment (`SampleDelivery.viewers`), which the job consumer checks.

Adding an event: its TypedDict and builder here, a handler named after its type in the
consumer that delivers it (check the viewer), one case in the page script.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from heterps_core.progress import Progress

WORK_STATUS: Literal["work.status"] = "work.status"
JOB_SAMPLE: Literal["job.sample"] = "job.sample"


class WorkView(TypedDict):
    """What every event says of a work record."""

    id: int
    project: int
    status: str
    progress: float  # 0..1
    message: str
    metrics: dict[str, Any]
    error: str
    finished: bool


class WorkState(WorkView):
    """A record's whole state (`background.services.state`): pages, the API, events."""

    kind: str
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    queue: str
    waiting: dict[str, Any] | None  # queued: its place in line and what holds the queue


class Sample(TypedDict):
    """One runtime (or data-parallel) sample, the shape of a `JobMetric` row plus the live
    figures; `stages` holds one entry per stage (pipeline) or per worker (data-parallel)."""

    step: int
    total_steps: int
    elapsed_s: float
    samples_per_s: float  # the last window's
    loss: float | None
    cost: float  # dollars accrued in this run so far
    stages: list[dict[str, Any]]
    window_s: NotRequired[float]
    run_samples_per_s: NotRequired[float | None]  # the run's measured throughput so far
    span_s: NotRequired[float]
    startup_s: NotRequired[float | None]
    produced_at: NotRequired[float]  # wall clock when the runner handed it over
    runner: NotRequired[str]
    phase: NotRequired[str]
    switch: NotRequired[dict[str, Any] | None]
    evaluation: NotRequired[dict[str, Any] | None]


class WorkStatus(TypedDict):
    type: Literal["work.status"]
    work: WorkState


class JobSample(TypedDict):
    type: Literal["job.sample"]
    work: WorkView  # `metrics` is the sample (a `Sample`)


class SampleDelivery(JobSample):
    """A `JobSample` on the channel layer: with who may see it, never sent to a browser."""

    viewers: list[int]


Event = WorkStatus | JobSample


def work_status(state: WorkState) -> WorkStatus:
    return {"type": WORK_STATUS, "work": state}


def job_sample(project_id: int, work_id: int, progress: Progress) -> JobSample:
    """The sample in `progress.metrics`, with the run's progress as of it."""
    return {"type": JOB_SAMPLE, "work": {
        "id": work_id, "project": project_id, "status": "running",
        "progress": progress.fraction, "message": progress.message,
        "metrics": progress.metrics, "error": "", "finished": False,
    }}


def sample_delivery(event: JobSample, viewers: list[int]) -> SampleDelivery:
    return {"type": event["type"], "work": event["work"], "viewers": viewers}


def for_browser(message: SampleDelivery) -> JobSample:
    """The event a browser gets of a delivery (who else may see it stays on the server)."""
    return {"type": message["type"], "work": message["work"]}
