"""A job's history: its runtime samples (stored, then published after the commit), its
log and its last run's summary. Written by the runners while a run executes."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from heterps_core.progress import Progress
from webapp.jobs.models import Job, JobMetric
from webapp.projects.models import Membership

logger = logging.getLogger(__name__)
LOG_LIMIT = 200_000  # characters kept; the oldest lines go first


def record_sample(job_id: int, run: int, sample: dict[str, Any], base_cost: float) -> None:
    """Store one runtime sample and the job's running totals (`base_cost`: earlier runs)."""
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
    """Send a runtime sample to the job's viewers; call after the commit that stored it.
    The event carries who may see it (every role may view), so each viewer's consumer
    re-checks without a query of its own."""
    layer = get_channel_layer()
    if layer is None:
        return
    viewers = list(Membership.objects.filter(project_id=project_id)
                   .values_list("user_id", flat=True))
    work = {"id": work_id, "project": project_id, "status": "running",
            "progress": progress.fraction, "message": progress.message,
            "metrics": progress.metrics, "error": "", "finished": False}
    try:
        async_to_sync(layer.group_send)(
            sample_group(work_id), {"type": "job.sample", "viewers": viewers, "work": work}
        )
    except Exception:  # live metrics are advisory; the rows in the database are the truth
        logger.warning("could not publish a sample of work %s", work_id, exc_info=True)


def finish_run(job_id: int, summary: dict[str, Any], line: str) -> None:
    updates: dict[str, Any] = {"summary": summary}
    if summary.get("throughput_definition"):  # the run's one measured figure, final
        updates["last_throughput"] = summary["throughput"]
    Job.objects.filter(pk=job_id).update(**updates)
    log(job_id, line)


def log(job_id: int, line: str) -> None:
    stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
    with transaction.atomic():
        job = Job.objects.select_for_update().only("log").get(pk=job_id)
        text = f"{job.log}{stamp} {line}\n"
        Job.objects.filter(pk=job_id).update(log=text[-LOG_LIMIT:])
