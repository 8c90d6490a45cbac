"""The `job-run` work kind: executes one run of a job with the job's runner.

Every sample the runner hands over is stored once (a `JobMetric` row and the job's totals)
and published once, after the commit, as a typed `job.sample` event
(`runners.RunContext.store` -> `records.store_sample`). A cancel asked for on the work record sets
the context's stop event, which the runner's executor polls.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Max

from webapp.background.context import WorkContext
from webapp.background.kinds import WorkKind, register
from webapp.jobs import runners, services
from webapp.jobs.models import Job


@register
class JobRunKind(WorkKind):
    name = services.RUN_KIND
    label = "Run an approved plan"
    references = {"job": Job}

    def clean_params(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise ValidationError({"params": "must be a JSON object"})
        job_id, run = params.get("job"), params.get("run", 1)
        if not isinstance(job_id, int) or not Job.objects.filter(pk=job_id).exists():
            raise ValidationError({"job": f"no job {job_id!r}"})
        if not isinstance(run, int) or run < 1:
            raise ValidationError({"run": f"must be a positive run number, got {run!r}"})
        cleaned: dict[str, Any] = {"job": job_id, "run": run}
        resume = params.get("resume")
        if resume is not None:
            # A restart's checkpoint: step `step` of an earlier run of the same job.
            earlier, step = (resume.get("run"), resume.get("step")) if isinstance(
                resume, dict) else (None, None)
            if not (isinstance(earlier, int) and 1 <= earlier < run
                    and isinstance(step, int) and step >= 1):
                raise ValidationError({"resume": (
                    f"must be {{\"run\": an earlier run (1..{run - 1}), \"step\": a positive "
                    f"step}}, got {resume!r}")})
            cleaned["resume"] = {"run": earlier, "step": step}
        return cleaned

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        job = Job.objects.get(pk=ctx.params["job"])
        run = ctx.params["run"]
        # Earlier runs' cost, as it stood when this run started (a rerun of this very run
        # after a worker died must not count its own partial cost twice).
        base_cost = _cost_before(job, run)
        context = runners.RunContext(job=job, run=run, base_cost=base_cost, work=ctx)
        return runners.for_job(job).execute(job, context)


def _cost_before(job: Job, run: int) -> float:
    earlier = job.metrics.filter(run__lt=run).values("run").annotate(cost=Max("cost"))
    return float(sum(row["cost"] for row in earlier))
