"""Job rules: approve a plan, start / cancel / restart its run, what pages show of a job.

Views, the API and the job-run kind come through here. A job's run is a generic
`background.Work` record of kind `job-run`, so progress, cancel and the websocket are the
ones every long action uses; `records` keeps the job's own history (metric rows, log,
summary, accrued cost). How a job runs is its runner's business (`runners`): approving
asks the chosen runner (`runners.get`) to clean its input into the job's options; the job
page's runner part is `pages`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from heterps_core.errors import InstanceError
from heterps_core.limits import LIMITS
from heterps_core.plan import Plan
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.budgets.services import refuse_spent
from webapp.jobs import runners, spot
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.options import PlanSource, RunOptions
from webapp.jobs.records import finish_run, log, publish_sample, record_sample, sample_group
from webapp.jobs.runners.resume import ResumePoint
from webapp.projects.permissions import Action, AnyUser, check
from webapp.projects.services import checked_budget
from webapp.refusals import StateRefusal

RUN_KIND = "job-run"
# A restart after these continues from the run's checkpoint; after a success it starts anew.
RESUMABLE = frozenset({Status.FAILED, Status.CANCELLED})
MAX_STEPS = int(LIMITS["steps"].high)  # the one table's bound (the API's schema says it)
DEFAULT_BATCH = 64  # when neither the person approving nor the plan's request gives one

__all__ = [
    "PlanSource", "RunOptions", "approve", "approve_plan", "cancel", "check_run_number",
    "finish_run", "log", "metrics_series", "next_run", "publish_sample", "record_sample",
    "restart", "resume", "resume_point", "sample_group", "source_of", "start_run", "state",
]


def source_of(plan_result: Any) -> PlanSource:
    """Reads a planning result row: `project`, `plan` (spec JSON) and the model it was
    planned for (`model_name`/`model_size`, or a `model` / `request.model` with `zoo_name`
    / `name` and `size`). The planning app owns that model; this is the whole interface."""
    request = getattr(plan_result, "request", None)
    model = getattr(plan_result, "model", None) or getattr(request, "model", None)
    model_name = getattr(plan_result, "model_name", None) or _first(
        model, "runtime_model", "zoo_name", "zoo", "name"
    )
    size = getattr(plan_result, "model_size", None) or _first(model, "size") or "tiny"
    batch = getattr(plan_result, "batch_size", None) or getattr(request, "batch_size", None)
    raw = plan_result.plan
    if not raw or getattr(plan_result, "feasible", True) is False:
        raise ValidationError({"plan": "this scheduler found no feasible plan; nothing to run"})
    plan = raw if isinstance(raw, dict) else raw.to_dict()
    return PlanSource(
        project=plan_result.project,
        plan=plan,
        model_name=str(model_name or ""),
        model_size=str(size),
        batch_size=batch,
        scheduler=str(getattr(plan_result, "scheduler", "") or plan.get("scheduler", "")),
        result_id=plan_result.pk,
        name=_job_name(model, model_name, size, request, plan_result),
    )


def _job_name(model: Any, model_name: Any, size: str, request: Any, plan_result: Any) -> str:
    # Model, size and plan, as the planning pages call them ("plan #3", the request's id);
    # the run number is the job's own (`runs`).
    shown = str(getattr(model, "name", "") or model_name or "job")
    if size and size not in shown and not getattr(model, "factory", ""):
        shown = f"{shown} {size}"
    scheduler = getattr(plan_result, "scheduler", "")
    if request is not None and getattr(request, "pk", None):
        shown = f"{shown} · plan #{request.pk}{f' {scheduler}' if scheduler else ''}"
    return shown[:200]


def approve_plan(
    user: User, plan_result: Any, options: RunOptions, start: bool = True,
    max_restarts: int | None = None,
) -> Job:
    """Approve a planning result: a job with the chosen run options, started at once."""
    return approve(user, source_of(plan_result), options, start=start,
                   max_restarts=max_restarts)


def approve(
    user: User, source: PlanSource, options: RunOptions, start: bool = True,
    max_restarts: int | None = None,
) -> Job:
    """`max_restarts`: automatic resumes after spot notices (`recovery`; None: its default,
    `spot.SPOT_DEFAULT` for a plan with a spot stage, else 0)."""
    check(user, source.project, Action.EDIT)
    fields = _fields(source, options)
    fields["max_restarts"] = (spot.default_max_restarts(source.plan) if max_restarts is None
                              else spot.clean_max_restarts(max_restarts))
    plan = Plan.from_dict(source.plan)
    runner = runners.get(options.runner)
    with transaction.atomic():
        job = Job(
            project=source.project,
            name=source.name or source.model_name,
            scheduler=source.scheduler or plan.scheduler,
            plan_result_id=source.result_id,
            predicted_throughput=plan.throughput or 0.0,
            predicted_cost_per_hour=plan.cost_per_hour or 0.0,
            created_by=user,
            **fields,
        )
        job.flushed_throughput = runner.flushed_throughput(job)  # a prediction, like the plan's
        job.save(force_insert=True)
        log(job.pk, f"approved by {user.get_username()}: {runner.describe(job)}")
        if start:
            job = start_run(user, job)
    return job


def start_run(user: User, job: Job, resume: bool = False) -> Job:
    """Queue a new run of the job (its first, or a restart once the last one finished);
    `resume`: from the checkpoint the last run left, if it failed or was cancelled."""
    check(user, job.project_id, Action.EDIT)
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("work").get(pk=job.pk)
        if job.active and job.work is not None:
            raise ValidationError({"job": f"run {job.runs} is still {job.status}"})
        refuse_spent(job)  # its budget or its project's is reached: `budget` says which
        run = next_run(job)
        point = resume_point(job) if resume else None
        params: dict[str, Any] = {"job": job.pk, "run": run}
        if point is not None:
            params["resume"] = point.to_params()
        work = work_services.start_work(user, job.project, RUN_KIND, params, by_owner=True)
        Job.objects.filter(pk=job.pk).update(work=work, runs=F("runs") + 1,
                                             last_step=point.step if point else 0,
                                             last_throughput=None, last_loss=None,
                                             summary=None)  # nothing of the last run's
        log(job.pk, f"run {run} queued by {user.get_username()}")
        if resume and job.runs:
            log(job.pk, f"run {run} resumes from {point.text()}" if point
                else f"{_why_from_zero(job)}: starting from step 0")
    return Job.objects.select_related("work", "project").get(pk=job.pk)


def next_run(job: Job) -> int:
    """The one rule for a run number: a run is the job's next (`runs` + 1), started only
    here (the `job-run` kind refuses any other number, and the generic start refuses the
    kind), so two attempts never share a run's metrics or cost."""
    return job.runs + 1


def check_run_number(job: Job, run: Any) -> int:
    """`run` if it is the job's next run number (a plain int); ValidationError on `run`."""
    expected = next_run(job)
    if type(run) is not int or run != expected:
        shown = repr(run) if len(repr(run)) <= 40 else f"{repr(run)[:40]}..."
        raise ValidationError({"run": f"the job's next run is {expected}; got {shown} (runs "
                                      "are numbered by the job's start and restart)"})
    return run


def restart(user: User, job: Job) -> Job:
    """A new run; it resumes from the newest complete checkpoint of the latest run when that
    run failed (a lost worker, a spot notice, an error) or was cancelled."""
    return start_run(user, job, resume=True)


def resume(user: AnyUser, job: Job, step: Any) -> Job:
    """The job page's "Resume from step N" (a run a spot notice stopped): a new run from the
    checkpoint at step `step`. Refused, starting nothing, unless that checkpoint is the one a
    restart resumes from now (a stale page's step, a checkpoint removed since): the click
    promised that step, never a start from step 0."""
    check(user, job.project_id, Action.EDIT)
    try:
        wanted = int(step)
    except (TypeError, ValueError):
        raise ValidationError({"resume_step": f"must be a step number, got {step!r}"}) from None
    point = resume_point(job)
    if point is None or point.step != wanted:
        now = f"a restart now resumes from step {point.step}" if point else \
            "a restart now starts from step 0"
        raise ValidationError({"resume_step": f"step {wanted}'s checkpoint is not the one to "
                                              f"resume from ({now}); nothing was started"})
    return start_run(cast(User, user), job, resume=True)


def resume_point(job: Job) -> ResumePoint | None:
    """Where a restart of the job would continue from (None: step 0)."""
    if job.work is None or job.work.status not in RESUMABLE:
        return None
    return runners.for_job(job).resume_point(job)


def _why_from_zero(job: Job) -> str:
    if job.work is not None and job.work.status not in RESUMABLE:
        return f"run {job.runs} {job.work.status}"
    return "no complete checkpoint"


def cancel(user: AnyUser, job: Job) -> Job:
    check(user, job.project_id, Action.EDIT)
    if job.work is None:
        raise ValidationError({"job": "has no run to cancel"})
    work_services.cancel_work(user, job.work)
    log(job.pk, f"cancel requested by {user.get_username()}")
    return Job.objects.select_related("work", "project").get(pk=job.pk)


def metrics_series(job: Job, run: int | None = None) -> list[dict[str, Any]]:
    """The run's samples as JSON rows (the latest run by default)."""
    rows = JobMetric.objects.filter(job=job, run=run or job.runs).order_by("elapsed_s")
    return [
        {"step": m.step, "total_steps": m.total_steps, "elapsed_s": m.elapsed_s,
         "samples_per_s": m.samples_per_s, "loss": m.loss, "cost": m.cost,
         "stages": m.stages}
        for m in rows
    ]


def state(job: Job) -> dict[str, Any]:
    """What the job page, the API and the CLI show about a job."""
    return {
        "id": job.pk,
        "project": job.project_id,
        "name": job.name,
        "status": job.status,
        "run": job.runs,
        "work": job.work_id,
        "model": f"{job.model_name} ({job.model_size})",
        "scheduler": job.scheduler,
        "runner": job.runner,
        "options": job.options,
        "sync_mode": job.sync_mode,
        "sync_params": job.sync_params,
        "dataparallel": job.dataparallel,
        "binding": job.binding,
        "steps": job.steps,
        "step": job.last_step,
        "predicted_throughput": job.predicted_throughput,
        "predicted_cost_per_hour": job.predicted_cost_per_hour,
        "last_throughput": job.last_throughput,
        "last_loss": job.last_loss,
        "accrued_cost": job.accrued_cost,
        "summary": job.summary,
        "error": job.work.error if job.work else "",
    }


def _fields(source: PlanSource, options: RunOptions) -> dict[str, Any]:
    problems: dict[str, str] = {}
    if not source.model_name:
        problems["model_name"] = "the plan names no model to run"
    if not 1 <= options.steps <= MAX_STEPS:
        problems["steps"] = f"must be in 1..{MAX_STEPS}, got {options.steps}"
    try:
        plan = Plan.from_dict(source.plan)
    except InstanceError as exc:
        raise ValidationError({f"plan.{exc.field}": exc.problem}) from exc
    if options.budget is not None:
        try:
            checked_budget(options.budget)
        except ValidationError as exc:
            problems.update({k: " ".join(v) for k, v in exc.message_dict.items()})
    if options.runner not in runners.RUNNERS:
        problems["runner"] = (f"must be one of {', '.join(runners.RUNNERS.names())}, "
                              f"got {options.runner!r}")
    if problems:
        raise ValidationError(problems)
    options = replace(options, batch_size=options.batch_size or source.batch_size or DEFAULT_BATCH)
    try:
        cleaned = runners.get(options.runner).clean(options, source, plan)
    except ValidationError as exc:  # named as the caller named the runner's fields
        kind = StateRefusal if isinstance(exc, StateRefusal) else ValidationError
        raise kind({options.field(name): messages
                               for name, messages in exc.message_dict.items()}) from exc
    return {
        "runner": options.runner,
        "options": cleaned,
        "plan": source.plan,
        "model_name": source.model_name,
        "model_size": source.model_size,
        "steps": options.steps,
        "batch_size": options.batch_size,
        "lr": options.lr,
        "seed": options.seed,
        "budget": options.budget,
    }


def _first(obj: Any, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value:
            return value
    return None
