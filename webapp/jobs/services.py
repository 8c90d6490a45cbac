"""Job rules: approve a plan, start / cancel / restart its run, record runtime samples.

Views, the API and the job-run kind come through here. A job's run is a generic
`background.Work` record of kind `job-run`, so progress, cancel and the websocket are the
ones every long action uses; this module adds the job's own history (metric rows, log,
summary, accrued cost).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from heterps_core.errors import InstanceError
from heterps_core.plan import Plan
from heterps_core.progress import Progress
from webapp.background import services as work_services
from webapp.jobs import dataparallel, runconfig
from webapp.jobs.models import Job, JobMetric, Runner
from webapp.projects.models import Membership, Project
from webapp.projects.permissions import Action, AnyUser, check

logger = logging.getLogger(__name__)
RUN_KIND = "job-run"
MAX_STEPS = 1_000_000
LOG_LIMIT = 200_000  # characters kept; the oldest lines go first


@dataclass(frozen=True)
class PlanSource:
    """What approving needs from a planning result (see `source_of`)."""

    project: Project
    plan: dict[str, Any]
    model_name: str
    model_size: str = "tiny"
    batch_size: int | None = None
    scheduler: str = ""
    result_id: int | None = None
    name: str = ""


@dataclass(frozen=True)
class RunOptions:
    """What the person approving chooses: sync mode, binding, steps and training knobs.
    `runner="dataparallel"` trains the plan's model data-parallel instead: `sync_mode` and
    `sync_params` then name a mode of heterps_core.dataparallel and its parameters, and
    `dataparallel` holds workers, slowdowns ("1,1,4" or a list) and backend."""

    steps: int
    sync_mode: str = "bsp"
    binding: dict[str, str] | None = None
    sync_params: dict[str, Any] | None = None
    micro_batches: int | None = None
    lr: float = 0.05
    seed: int = 0
    batch_size: int | None = None
    runner: str = Runner.PIPELINE
    dataparallel: dict[str, Any] | None = None


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
    user: AbstractBaseUser, plan_result: Any, options: RunOptions, start: bool = True
) -> Job:
    """Approve a planning result: a job with the chosen run options, started at once."""
    return approve(user, source_of(plan_result), options, start=start)


def approve(
    user: AbstractBaseUser, source: PlanSource, options: RunOptions, start: bool = True
) -> Job:
    check(user, source.project, Action.EDIT)
    fields = _fields(source, options)
    if fields["runner"] == Runner.PIPELINE:
        runconfig.check(fields)
    plan = Plan.from_dict(source.plan)
    with transaction.atomic():
        job = Job.objects.create(
            project=source.project,
            name=source.name or source.model_name,
            scheduler=source.scheduler or plan.scheduler,
            plan_result_id=source.result_id,
            predicted_throughput=plan.throughput or 0.0,
            predicted_cost_per_hour=plan.cost_per_hour or 0.0,
            created_by=user,
            **{k: v for k, v in fields.items() if k != "plan"},
            plan=source.plan,
        )
        _log(job.pk, f"approved by {user.get_username()}: {_describe(job)}")
        if start:
            job = start_run(user, job)
    return job


def start_run(user: AbstractBaseUser, job: Job) -> Job:
    """Queue a new run of the job (its first, or a restart once the last one finished)."""
    check(user, job.project_id, Action.EDIT)
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("work").get(pk=job.pk)
        if job.active and job.work is not None:
            raise ValidationError({"job": f"run {job.runs} is still {job.status}"})
        work = work_services.start_work(
            user, job.project, RUN_KIND, {"job": job.pk, "run": job.runs + 1}
        )
        Job.objects.filter(pk=job.pk).update(work=work, runs=F("runs") + 1, last_step=0,
                                             last_throughput=None, summary=None)
        _log(job.pk, f"run {job.runs + 1} queued by {user.get_username()}")
    return Job.objects.select_related("work", "project").get(pk=job.pk)


def restart(user: AbstractBaseUser, job: Job) -> Job:
    return start_run(user, job)


def cancel(user: AnyUser, job: Job) -> Job:
    check(user, job.project_id, Action.EDIT)
    if job.work is None:
        raise ValidationError({"job": "has no run to cancel"})
    work_services.cancel_work(user, job.work)
    _log(job.pk, f"cancel requested by {user.get_username()}")
    return Job.objects.select_related("work", "project").get(pk=job.pk)


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
            "last_throughput": sample["samples_per_s"],
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
    Job.objects.filter(pk=job_id).update(summary=summary)
    _log(job_id, line)


def log(job_id: int, line: str) -> None:
    _log(job_id, line)


def metrics_series(job: Job, run: int | None = None) -> list[dict[str, Any]]:
    """The run's samples as JSON rows (the latest run by default)."""
    rows = JobMetric.objects.filter(job=job, run=run or job.runs).order_by("elapsed_s")
    return [
        {"step": m.step, "total_steps": m.total_steps, "elapsed_s": m.elapsed_s,
         "samples_per_s": m.samples_per_s, "loss": m.loss, "cost": m.cost,
         "stages": m.stages}
        for m in rows
    ]


def dataparallel_view(job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
    """The latest sample's per-worker rows, phase and switch time, for the server-rendered
    job page (the script takes over with live samples)."""
    workers = [
        dict(w, bytes_mb=(w.get("bytes_sent") or 0) / 1e6,
             step_time_ms=None if w.get("step_time_s") is None else w["step_time_s"] * 1000)
        for w in (series[-1]["stages"] if series else [])
    ]
    last = {"phase": workers[-1]["phase"] if workers else "",
            "switch_s": workers[-1].get("switch_s") if workers else None}
    unit = "emulated s" if job.dataparallel.get("backend", "emulated") == "emulated" else "s"
    return {"dp_workers": workers, "dp_last": last, "dp_time_unit": unit}


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
    if options.runner not in Runner.values:
        problems["runner"] = f"must be one of {', '.join(Runner.values)}, got {options.runner!r}"
    if problems:
        raise ValidationError(problems)
    batch = options.batch_size or source.batch_size or 64
    micro = options.micro_batches or (1 if len(plan.stages) == 1 else 4)
    sync_params = dict(options.sync_params or {})
    dp: dict[str, Any] = {}
    if options.runner == Runner.DATAPARALLEL:
        sync_params = dataparallel.resolve_mode(options.sync_mode, sync_params)
        given = options.dataparallel or {}
        dp = dataparallel.settings(given.get("workers", dataparallel.DEFAULT_WORKERS),
                                   given.get("slowdowns") or (), given.get("backend", "emulated"))
        dataparallel.train_config(dp, options.steps, batch, options.lr, options.seed)
    return {
        "runner": options.runner,
        "sync_params": sync_params,
        "dataparallel": dp,
        "plan": source.plan,
        "model_name": source.model_name,
        "model_size": source.model_size,
        "steps": options.steps,
        "batch_size": batch,
        "micro_batches": micro,
        "lr": options.lr,
        "seed": options.seed,
        "sync_mode": options.sync_mode,
        "binding": {k: v for k, v in (options.binding or {}).items() if v},
    }


def _describe(job: Job) -> str:
    if job.is_dataparallel:
        dp = job.dataparallel
        slow = ",".join(f"{s:g}" for s in dp.get("slowdowns") or []) or "none"
        return (f"{job.model_name} ({job.model_size}) data-parallel, {job.steps} steps of "
                f"{job.batch_size} per worker, sync {job.sync_mode} {job.sync_params}, "
                f"{dp.get('workers')} workers, slowdowns {slow}, backend {dp.get('backend')}")
    binding = ", ".join(f"{k}={v}" for k, v in job.binding.items()) or "all on local cpu"
    return (f"{job.model_name} ({job.model_size}), {job.steps} steps of {job.batch_size}, "
            f"sync {job.sync_mode}, binding {binding}")


def _log(job_id: int, line: str) -> None:
    stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
    with transaction.atomic():
        job = Job.objects.select_for_update().only("log").get(pk=job_id)
        text = f"{job.log}{stamp} {line}\n"
        Job.objects.filter(pk=job_id).update(log=text[-LOG_LIMIT:])


def _first(obj: Any, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value:
            return value
    return None
