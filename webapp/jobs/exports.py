"""A job's samples as CSV (issue 25.12): every stored sample of every run (or of one run,
`?run=N`), for a spreadsheet or a notebook, as W&B and Determined users expect.

Rows are read from the database in chunks; the response is one body (a 10,000-sample run
is about 1 MB), which every client and test reads the same way."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from webapp.bounds import valid_id
from webapp.jobs.models import Job, JobMetric
from webapp.projects.permissions import get_owned

COLUMNS = ("job_id", "run", "step", "total_steps", "elapsed_s", "samples_per_s_window",
           "samples_per_s_run", "loss", "cost_usd_run", "recorded_at")


class _Echo:
    """A file-like object whose write hands the line back (csv.writer into a stream)."""

    def write(self, value: str) -> str:
        return value


def metrics_csv(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_owned(request.user, Job.objects.all(), pk)
    raw = request.GET.get("run")
    run = None
    if raw is not None:
        run = valid_id(raw)
        if run is None or run > max(job.runs, 1):
            return HttpResponseBadRequest(
                f"run: must be a run of job {job.pk} (1 to {max(job.runs, 1)}), "
                f"got {raw[:40]!r}\n", content_type="text/plain")
    response = HttpResponse("".join(rows(job, run)), content_type="text/csv")
    suffix = f"-run-{run}" if run else ""
    response["Content-Disposition"] = (
        f'attachment; filename="heterps-job-{job.pk}{suffix}-metrics.csv"')
    return response


def rows(job: Job, run: int | None = None) -> Iterator[str]:
    """The CSV's lines: the header, then the samples by run and time."""
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    metrics = JobMetric.objects.filter(job=job)
    if run is not None:
        metrics = metrics.filter(run=run)
    fields = ("run", "step", "total_steps", "elapsed_s", "samples_per_s",
              "run_samples_per_s", "loss", "cost", "recorded_at")
    for values in metrics.order_by("run", "elapsed_s").values_list(*fields).iterator(2000):
        yield writer.writerow([job.pk, *(_cell(v) for v in values)])


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
