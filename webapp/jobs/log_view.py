"""The job log page: one run's log file as plain text (`/jobs/<id>/log/?run=N&kb=K`).

`run` defaults to the latest run; `kb` is how much of the file's end to show (default
`DEFAULT_KB`; `0`: all of it). Anyone who may view the job may read its log.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from webapp.bounds import query_int
from webapp.jobs import runlog
from webapp.jobs.models import Job
from webapp.projects.permissions import get_owned

DEFAULT_KB = 64
MAX_KB = 100 * 1024  # a larger file than 100 MB is read whole with kb=0
TEXT = "text/plain; charset=utf-8"


def job_log(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_owned(request.user, Job.objects.only("project", "created_at", "runs"),
                    pk)
    try:
        run = query_int(request.GET, "run", 1, runlog.current_run(job))
        kb = query_int(request.GET, "kb", 0, MAX_KB)
    except ValidationError as exc:
        return HttpResponseBadRequest(
            "\n".join(f"{name}: {'; '.join(problems)}"
                      for name, problems in exc.message_dict.items()), content_type=TEXT)
    run = run or runlog.current_run(job)
    kb = DEFAULT_KB if kb is None else kb
    tail = runlog.tail(job, run, kb * 1024 if kb else None)
    head = ""
    if tail.cut:
        head = (f"[the last {kb} KB of {tail.size / 1024:.0f} KB; all of it: "
                f"{request.path}?run={run}&kb=0]\n")
    return HttpResponse(head + tail.text, content_type=TEXT)
