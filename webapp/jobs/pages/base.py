"""A runner's part of the job page: its templates (`templates/jobs/runners/NAME.html`, its
section; `NAME_settings.html`, rows of the settings list; `NAME_summary.html`, the last run),
labels and the context they need. A runner without a page of its own gets this one."""

from __future__ import annotations

from typing import Any

from webapp.jobs.models import Job

FOLDER = "jobs/runners"


class RunnerPage:
    def context(self, job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
        """The templates and labels of `job`'s runner, and its section's data."""
        return {
            "runner_template": f"{FOLDER}/{job.runner}.html",
            "runner_settings": f"{FOLDER}/{job.runner}_settings.html",
            "runner_summary": f"{FOLDER}/{job.runner}_summary.html",
            "throughput_label": "measured", "estimate_note": "",
        }
