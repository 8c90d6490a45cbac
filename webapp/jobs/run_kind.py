"""The `job-run` work kind: executes one run of a job with the job's runner.

Every sample the runner hands over is stored once (a `JobMetric` row and the job's totals)
and published once, after the commit, as a typed `job.sample` event
(`runners.RunContext.store` -> `records.store_sample`). A cancel asked for on the work record sets
the context's stop event, which the runner's executor polls.
"""

from __future__ import annotations

from typing import Any, TypeGuard

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
    started_by = ("a job's runs start through the job: POST /api/jobs/ (approve and start), "
                  "POST /api/jobs/{id}/restart/, or the job page's Resume")

    def clean_params(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise ValidationError({"params": "must be a JSON object"})
        job_id = params.get("job")
        job = Job.objects.filter(pk=job_id).first() if _row_id(job_id) else None
        if job is None:
            raise ValidationError({"job": f"no job {job_id!r}"})
        problems: dict[str, str] = {}
        resume = params.get("resume")
        if resume is not None:
            # A restart's checkpoint: step `step` of an earlier run of the same job.
            earlier, step = (resume.get("run"), resume.get("step")) if isinstance(
                resume, dict) else (None, None)
            last = services.next_run(job) - 1
            if not (type(earlier) is int and 1 <= earlier <= last
                    and type(step) is int and 1 <= step <= services.MAX_STEPS):
                problems["resume"] = (
                    f"must be {{\"run\": an earlier run (1..{last}), \"step\": a step "
                    f"(1..{services.MAX_STEPS})}}, got {resume!r}"[:300])
        try:
            run = services.check_run_number(job, params.get("run"))
        except ValidationError as exc:
            problems |= {name: " ".join(msgs) for name, msgs in exc.message_dict.items()}
        if problems:
            raise ValidationError(problems)
        cleaned: dict[str, Any] = {"job": job_id, "run": run}
        if resume is not None:
            cleaned["resume"] = {"run": resume["run"], "step": resume["step"]}
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


def _row_id(value: Any) -> TypeGuard[int]:
    """A plain int a database key can hold (True is not job 1; 10**30 is no id)."""
    return type(value) is int and 1 <= value < 2**63
