"""A job's history as its runs write it: each sample stored once and published once, the
log lines of its runs, and the last run's summary.

A sample is one `JobMetric` row and the job's running totals, written in the transaction
that also moves the work record's progress and lease (no copy of the sample there); after
the commit it goes out once, as a `JobSample` event on the job's sample group.
"""

from __future__ import annotations

import logging
import time
from typing import Any, cast

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from heterps_core.progress import Progress
from webapp.background import events
from webapp.background.context import WorkCancelled, WorkContext
from webapp.jobs import runlog
from webapp.jobs.models import Job, JobMetric
from webapp.projects.models import Membership

logger = logging.getLogger(__name__)


def store_sample(job: Job, run: int, base_cost: float, work: WorkContext,
                 data: dict[str, Any]) -> None:
    """Store a sample of run `run` (the row, the job's totals; `base_cost`: earlier runs'),
    move the work record's progress, and publish the sample once that is committed. A
    cancel asked on the record sets `work.stop`, which the runner's executor polls."""
    # Wall-clock time the runner handed the sample over: lets clients (and bench/web.py)
    # measure how long it took to reach them.
    data["produced_at"] = time.time()
    sample = cast(events.Sample, data)
    progress = Progress(sample["step"], sample["total_steps"], _message(sample))
    event = events.job_sample(job.project_id, work.work_id,
                              Progress(progress.current, progress.total, progress.message, data))
    with transaction.atomic():
        record_sample(job.pk, run, sample, base_cost)
        transaction.on_commit(lambda: _send(job.project_id, event))
        try:
            work.progress(progress, publish=False)  # the sample is the event
        except WorkCancelled:
            work.stop.set()


def record_sample(job_id: int, run: int, sample: events.Sample, base_cost: float) -> None:
    """Store one sample and the job's running totals (`base_cost`: earlier runs)."""
    with transaction.atomic():
        JobMetric.objects.create(
            job_id=job_id,
            run=run,
            step=sample["step"],
            total_steps=sample["total_steps"],
            elapsed_s=sample["elapsed_s"],
            samples_per_s=sample["samples_per_s"],
            loss=sample["loss"],
            cost=sample["cost"],
            stages=sample["stages"],
            run_samples_per_s=sample.get("run_samples_per_s"),
        )
        updates: dict[str, Any] = {
            "accrued_cost": base_cost + sample["cost"],
            "last_step": sample["step"],
            # The run's measured throughput (runtime/throughput.py) where the runner
            # reports it; a runner without it shows its window figure.
            "last_throughput": sample.get("run_samples_per_s", sample["samples_per_s"]),
        }
        if sample["loss"] is not None:
            updates["last_loss"] = sample["loss"]
        Job.objects.filter(pk=job_id).update(**updates)


def sample_group(work_id: int) -> str:
    return f"job-samples-{work_id}"


def publish_sample(project_id: int, work_id: int, progress: Progress) -> None:
    """Send the sample in `progress.metrics` to the job's viewers; call after the commit
    that stored it."""
    _send(project_id, events.job_sample(project_id, work_id, progress))


def _send(project_id: int, event: events.JobSample) -> None:
    # The delivery carries who may see it (every role may view), taken now, so each
    # viewer's consumer re-checks without a query of its own.
    layer = get_channel_layer()
    if layer is None:
        return
    viewers = list(Membership.objects.filter(project_id=project_id)
                   .values_list("user_id", flat=True))
    work_id = event["work"]["id"]
    try:
        async_to_sync(layer.group_send)(sample_group(work_id),
                                        events.sample_delivery(event, viewers))
    except Exception:  # live metrics are advisory; the rows in the database are the truth
        logger.warning("could not publish a sample of work %s", work_id, exc_info=True)


def _message(sample: events.Sample) -> str:
    loss = "-" if sample["loss"] is None else f"{sample['loss']:.4f}"
    message = (f"step {sample['step']}/{sample['total_steps']}, "
               f"{sample['samples_per_s']:.1f} samples/s, loss {loss}")
    if sample.get("phase"):
        message += f", phase {sample['phase']}"
    return message


def finish_run(job_id: int, summary: dict[str, Any], line: str) -> None:
    updates: dict[str, Any] = {"summary": summary}
    if summary.get("throughput_definition"):  # the run's one measured figure, final
        updates["last_throughput"] = summary["throughput"]
    with transaction.atomic():
        Job.objects.filter(pk=job_id).update(**updates)
        if "last_throughput" in updates:
            _keep_final_figure(job_id, summary["throughput"])
    log(job_id, line)


def _keep_final_figure(job_id: int, per_s: float | None) -> None:
    """The finished run's measured figure on its last sample row, where it outlives the
    summary a restart clears (`webapp.jobs.throughput`)."""
    runs = Job.objects.filter(pk=job_id).values_list("runs", flat=True).first()
    if runs is None:
        return
    last = (JobMetric.objects.filter(job_id=job_id, run=runs).order_by("-elapsed_s")
            .values_list("pk", flat=True).first())
    if last is not None:
        JobMetric.objects.filter(pk=last).update(run_samples_per_s=per_s)


def log(job_id: int, line: str) -> None:
    """Append a line to the log of the job's latest run (run 1 while it is approved)."""
    job = Job.objects.only("pk", "created_at", "runs").get(pk=job_id)
    runlog.write(job, runlog.current_run(job), line)
