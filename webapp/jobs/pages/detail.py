"""The job page's parts that depend on the job's runner, asked of the registry."""

from __future__ import annotations

from typing import Any

from webapp.jobs import runners, services
from webapp.jobs.models import Job


def runner_parts(job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
    """The runner's section (templates, labels, data), its label and script, and the step
    the Restart button continues from."""
    runner = runners.for_job(job)
    point = None if job.active else services.resume_point(job)
    return {**runner.page.context(job, series), "runner_label": runner.label,
            "runner_script": runner.script, "restart_step": point.step if point else 0}
