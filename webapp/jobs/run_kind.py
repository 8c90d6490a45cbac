"""The `job-run` work kind: executes a job's plan with `heterps_core.runtime`.

Every runtime sample is stored as a `JobMetric` row and published through the generic
progress channel (its `metrics` are the sample), so the job page's websocket gets it after
the commit. A cancel asked for on the work record stops the runtime's processes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core.errors import HeterPSError
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.runtime import Launcher, MetricsSample, RunCancelled, RunResult
from webapp.background.context import WorkCancelled, WorkContext
from webapp.background.kinds import WorkKind, register
from webapp.jobs import dataparallel_run, runconfig, services
from webapp.jobs.models import Job
from workers.agents import coordinator_address, dispatch_agents, remote_units

FIELDS = ("plan", "model_name", "model_size", "steps", "batch_size", "micro_batches", "lr",
          "seed", "sync_mode", "binding")


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
        return {"job": job_id, "run": run}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        job = Job.objects.get(pk=ctx.params["job"])
        run = ctx.params["run"]
        progress = ctx.progress
        # Earlier runs' cost, as it stood when this run started (a rerun of this very run
        # after a worker died must not count its own partial cost twice).
        base_cost = _cost_before(job, run)
        stop = ctx.stop  # set on cancel, server shutdown or a lost lease
        ids = _Ids(job=job.pk, project=job.project_id, work=ctx.work_id)
        if job.is_dataparallel:
            return _run_dataparallel(job, run, ids, base_cost, progress, stop)
        fields = {name: getattr(job, name) for name in FIELDS}
        launcher = Launcher(
            runconfig.run_config(fields, runconfig.log_dir(job.pk, run)),
            sink=lambda sample: _on_sample(ids, run, base_cost, sample, progress, stop),
            cancel=stop,
        )
        services.log(job.pk, f"run {run}: starting {len(launcher.spec.ranks)} processes")
        try:
            launcher.start()
            _dispatch_remote_agents(launcher, job.pk, run)
            result = launcher.wait()
        except RunCancelled as exc:
            services.log(job.pk, f"run {run}: {exc}")
            raise WorkCancelled from exc
        except HeterPSError as exc:
            services.log(job.pk, f"run {run} failed: {exc}")
            raise
        summary = _summary(result)
        services.finish_run(
            job.pk, summary,
            f"run {run} finished: {summary['throughput']:.1f} samples/s measured "
            f"(plan {job.predicted_throughput:.1f}), ${summary['cost']:.4f} accrued",
        )
        return summary


@dataclass(frozen=True)
class _Ids:
    job: int
    project: int
    work: int


def _run_dataparallel(
    job: Job, run: int, ids: _Ids, base_cost: float, progress: ProgressCallback,
    stop: threading.Event,
) -> dict[str, Any]:
    """The job's model trained data-parallel (heterps_core.dataparallel); its down-sampled
    samples are stored and published exactly like the runtime's."""
    dp = job.dataparallel
    services.log(job.pk, f"run {run}: data-parallel {job.sync_mode} on {dp.get('workers')} "
                         f"workers ({dp.get('backend')} backend)")

    switch_logged = False

    def emit(sample: dict[str, Any]) -> None:
        nonlocal switch_logged
        if sample.get("switch") and not switch_logged:
            switch_logged = True
            s = sample["switch"]
            services.log(job.pk, f"run {run}: {s['previous']} -> {s['phase']} at "
                                 f"{s['time_s']:.4f} s, step {s['global_step']} ({s['reason']})")
        _store(ids, run, base_cost, sample, progress, stop)

    try:
        result, samples = dataparallel_run.train_job(job, emit, cancel=stop.is_set)
    except HeterPSError as exc:
        services.log(job.pk, f"run {run} failed: {exc}")
        raise
    if result.stopped == "cancelled":
        services.log(job.pk, f"run {run}: cancelled at step {result.global_steps}")
        raise WorkCancelled("cancelled")
    summary = dataparallel_run.summary(result, samples, job.predicted_cost_per_hour)
    unit = "emulated s" if dp.get("backend") == "emulated" else "s"
    loss = "-" if summary["final_loss"] is None else f"{summary['final_loss']:.4f}"
    services.finish_run(
        job.pk, summary,
        f"run {run} finished: {summary['steps']} steps in {summary['elapsed_s']:.3f} {unit}, "
        f"{summary['throughput']:.1f} samples/s, held-out loss {loss}",
    )
    return summary



def _dispatch_remote_agents(launcher: Launcher, job_id: int, run: int) -> None:
    """Ask the worker machines that provide the plan's `remote` types to host their stages."""
    remote = remote_units(launcher.spec)
    if not remote:
        return
    try:
        dispatch_agents(coordinator_address(launcher.address, launcher.config.host), remote)
        services.log(job_id, f"run {run}: waiting for agents of {', '.join(remote)}")
    except Exception as exc:  # broker down: wait() then fails naming the missing types
        services.log(job_id, f"run {run}: could not enqueue agents: {exc}")


def _on_sample(
    ids: _Ids, run: int, base_cost: float, sample: MetricsSample,
    progress: ProgressCallback, stop: threading.Event,
) -> None:
    _store(ids, run, base_cost, sample.to_dict(), progress, stop)


def _store(
    ids: _Ids, run: int, base_cost: float, data: dict[str, Any],
    progress: ProgressCallback, stop: threading.Event,
) -> None:
    # Wall-clock time the runtime handed the sample over: lets clients (and bench/web.py)
    # measure how long it took to reach them.
    data["produced_at"] = time.time()
    loss = "-" if data["loss"] is None else f"{data['loss']:.4f}"
    message = (f"step {data['step']}/{data['total_steps']}, "
               f"{data['samples_per_s']:.1f} samples/s, loss {loss}")
    if data.get("phase"):
        message += f", phase {data['phase']}"
    report = Progress(data["step"], data["total_steps"], message, data)
    # One transaction (one commit) for the metric row, the job's totals and the work
    # record; the sample goes out to the job's viewers once it is committed.
    with transaction.atomic():
        services.record_sample(ids.job, run, data, base_cost)
        transaction.on_commit(lambda: services.publish_sample(ids.project, ids.work, report))
        try:
            progress(report)
        except WorkCancelled:
            stop.set()  # the launcher polls it and stops every process


def _cost_before(job: Job, run: int) -> float:
    from django.db.models import Max

    earlier = (
        job.metrics.filter(run__lt=run).values("run").annotate(cost=Max("cost"))
    )
    return float(sum(row["cost"] for row in earlier))


def _summary(result: RunResult) -> dict[str, Any]:
    tail = result.losses[-10:]
    return {
        "steps": result.steps,
        "start_step": result.start_step,
        "throughput": result.throughput,
        "elapsed_s": result.elapsed_s,
        "cost": result.cost,
        "final_loss": sum(tail) / len(tail) if tail else None,
        "binding": result.binding,
        "checkpoint_step": result.checkpoint_step,
        "busy_s": {str(k): v for k, v in result.busy_s.items()},
        "idle_s": {str(k): v for k, v in result.idle_s.items()},
    }
