"""The data-parallel runner's part of the job page: the latest sample's per-worker rows,
phase and switch time, server-rendered (the page's script takes over with live samples)."""

from __future__ import annotations

from typing import Any

from webapp.jobs.models import Job
from webapp.jobs.pages.base import RunnerPage


def time_unit(job: Job) -> str:
    """The clock of the run's times: the emulated backend's, or the wall clock."""
    return "emulated s" if job.options.get("backend", "emulated") == "emulated" else "s"


class DataParallelPage(RunnerPage):
    def context(self, job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
        workers = [
            dict(w, bytes_mb=(w.get("bytes_sent") or 0) / 1e6,
                 step_time_ms=None if w.get("step_time_s") is None else w["step_time_s"] * 1000)
            for w in (series[-1]["stages"] if series else [])
        ]
        last = {"phase": workers[-1]["phase"] if workers else "",
                "switch_s": workers[-1].get("switch_s") if workers else None}
        unit = time_unit(job)
        return {**super().context(job, series), "dp_workers": workers, "dp_last": last,
                "dp_time_unit": unit, "estimate_note": " (pipeline)",
                "throughput_label": "wall clock" if unit == "s" else "emulated clock"}
