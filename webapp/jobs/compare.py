"""Runs compared (issue 25.12): the loss and throughput curves of several runs, of one job
or of several, overlaid on one chart each (`/jobs/compare/?job=12&job=15`). Every run of
each job asked for is drawn; a click on a legend entry hides or shows a run.

Jobs are named by id in the query: one the user cannot see answers 404, like its page
(no telling "not yours" from "none such"); a malformed id or too many answer 400 naming
the parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.bounds import valid_id
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.page_series import thinned
from webapp.projects.permissions import visible

MAX_JOBS = 8
MAX_RUNS = 10  # per job: its latest
POINTS = 400  # per curve, evenly thinned


class BadQuery(ValueError):
    pass


@dataclass(frozen=True)
class Curve:
    job: Job
    run: int
    rows: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job.pk, "run": self.run,
                "name": f"#{self.job.pk} {self.job.name} · run {self.run}",
                "elapsed_s": [r["elapsed_s"] for r in self.rows],
                "samples_per_s": [r["samples_per_s"] for r in self.rows],
                "step": [r["step"] for r in self.rows if r["loss"] is not None],
                "loss": [r["loss"] for r in self.rows if r["loss"] is not None]}


def compare(request: HttpRequest) -> HttpResponse:
    recent = visible(request.user, Job.objects.select_related("project")).only(
        "name", "runs", "project__name").order_by("-pk")[:100]
    context: dict[str, Any] = {"recent": recent, "chosen": [], "curves": []}
    try:
        jobs = chosen_jobs(request)
    except BadQuery as exc:
        context["error"] = str(exc)
        return render(request, "jobs/compare.html", context, status=400)
    curves = [c for job in jobs for c in job_curves(job)]
    context.update(chosen=jobs, chosen_ids=[j.pk for j in jobs],
                   curves=[c.to_dict() for c in curves])
    return render(request, "jobs/compare.html", context)


def chosen_jobs(request: HttpRequest) -> list[Job]:
    """The jobs named by `job` parameters, in order, each visible to the user."""
    raw = request.GET.getlist("job")
    if len(raw) > MAX_JOBS:
        raise BadQuery(f"job: at most {MAX_JOBS} jobs at a time, got {len(raw)}")
    ids: list[int] = []
    for text in raw:
        pk = valid_id(text)
        if pk is None:
            raise BadQuery(f"job: must be a job id (a whole number), got {text[:40]!r}")
        if pk not in ids:
            ids.append(pk)
    found = {j.pk: j for j in visible(request.user, Job.objects.select_related("project"))
             .filter(pk__in=ids)}
    if len(found) != len(ids):
        raise Http404("No such job.")
    return [found[pk] for pk in ids]


def job_curves(job: Job) -> list[Curve]:
    """One curve per run (its latest MAX_RUNS), oldest run first."""
    first = max(job.runs - MAX_RUNS + 1, 1)
    per_run: dict[int, list[dict[str, Any]]] = {}
    rows = (JobMetric.objects.filter(job=job, run__gte=first).order_by("run", "elapsed_s")
            .values("run", "step", "elapsed_s", "samples_per_s", "loss"))
    for row in rows.iterator(2000):
        per_run.setdefault(row["run"], []).append(dict(row))
    return [Curve(job, run, thinned(samples, POINTS)) for run, samples in sorted(per_run.items())]
