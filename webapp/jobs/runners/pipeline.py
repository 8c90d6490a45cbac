"""The pipeline runner: executes a job's plan with `heterps_core.runtime` (one process per
stage replica, the parameter server, agents on other machines for `remote` types).

Its input (`inputs.pipeline`): `sync_mode`, `binding`, `micro_batches`. Stored options (the
runtime's names): `sync` (the runtime's sync registry), `binding` (resource type -> target
text, only the types a person named; the others run on one local CPU thread) and
`micro_batches`. The runtime's compile step validates them; on top of it the binding is
checked against where it would run: a `remote` type needs a worker agent that could serve it.
Its part of the job page is `pages.pipeline`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from heterps_core import agents
from heterps_core.errors import HeterPSError, InstanceError
from heterps_core.plan import Plan
from heterps_core.provenance import this_host
from heterps_core.runtime import (
    Launcher,
    RunCancelled,
    RunConfig,
    RunPreempted,
    TrainSettings,
    sync,
    template,
)
from heterps_core.runtime.binding import Target, parse_binding
from heterps_core.runtime.compile import (
    checkpoint_every,
    compile_run,
    coordinator_host,
    default_checkpoint_every,
    default_micro_batches,
)
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.throughput import run_summary
from webapp.background import broker
from webapp.background.context import WorkCancelled
from webapp.budgets.guard import Guard
from webapp.jobs import measured, preempted, records
from webapp.jobs.figures import figure_tiers
from webapp.jobs.inputs.pipeline import (
    TARGETS_HELP,
    PipelineOptionsForm,
    PipelineOptionsSerializer,
)
from webapp.jobs.models import Job
from webapp.jobs.options import PIPELINE, PlanSource, RunOptions
from webapp.jobs.pages.pipeline import PipelinePage
from webapp.jobs.runners.base import JobRunner, RunContext
from webapp.jobs.runners.resume import ResumePoint, link_step, newest_checkpoint, unlink_step
from webapp.modelzoo import loading
from webapp.refusals import by_state

# The runtime's fields for a checkpoint it will not resume from (compile's checks).
RESUME_FIELDS = frozenset({"checkpoint", "resume"})


def log_dir(job: Job, run: int) -> Path:
    """Run `run`'s logs and checkpoints. The folder names the job's id and creation time: a
    database made afresh numbers its jobs from 1 again, and job 1 must not find (and be
    refused by) the checkpoints of an earlier database's job 1."""
    made = job.created_at.strftime("%Y%m%dT%H%M%S%f") if job.created_at else "draft"
    return Path(settings.VAR_DIR) / "jobs" / f"{job.pk}-{made}" / f"run-{run}"


def checkpoint_dir(job: Job, run: int) -> Path:
    return log_dir(job, run) / "checkpoints"


def run_config(job: Job, log_path: Path | None = None) -> RunConfig:
    """The runtime's config of a job (or of a job about to be created)."""
    # The runtime imports what it is named: only zoo names and allow-listed factories.
    model = loading.runnable(job.model_name)
    plan = Plan.from_dict(job.plan)
    options = job.options
    binding = parse_binding(_binding_text(options.get("binding") or {}), _resources(plan))
    config = RunConfig(
        plan=plan,
        train=TrainSettings(
            model=model, size=job.model_size, steps=job.steps, batch_size=job.batch_size,
            seed=job.seed, lr=job.lr, micro_batches=int(options["micro_batches"]),
            sync=str(options["sync"]),
        ),
        binding=binding,
        log_dir=str(log_path) if log_path else None,
        host=coordinator_host(binding),
        checkpoint_dir=str(log_path / "checkpoints") if log_path else None,
    )
    if log_path is None:
        return config
    # A run checkpoints every tenth of the run, or more often where the plan priced a spot
    # stage's lost work at a shorter interval (issue 26: it loses no more than priced).
    units = [s.units or 1 for s in plan.stages]
    every = default_checkpoint_every(job.steps, units)
    priced = checkpoint_every(config, units)
    return replace(config, checkpoint_every=min(every, priced) if priced else every)


class PipelineRunner(JobRunner):
    name = PIPELINE
    label = "pipeline run of the plan"
    options_form = PipelineOptionsForm
    options_serializer = PipelineOptionsSerializer
    page = PipelinePage()
    accrues_per_stage = True
    can_replan = True
    error_fields = {"sync": "sync_mode", "bind": "binding", "model": "model_name",
                    "size": "model_size"}

    def clean(self, options: RunOptions, source: PlanSource, plan: Plan) -> dict[str, Any]:
        given = options.options
        binding = given.get("binding") or {}
        if blank := [name for name, target in binding.items() if not str(target).strip()]:
            raise ValidationError({f"binding.{name}": f"choose where it runs: {TARGETS_HELP}"
                                   for name in blank})
        stored = {
            "sync": given.get("sync_mode") or "bsp",
            "binding": {name: str(target).strip() for name, target in binding.items()},
            "micro_batches": (given.get("micro_batches")
                              or default_micro_batches(len(plan.stages))),
        }
        draft = Job(plan=source.plan, model_name=source.model_name, model_size=source.model_size,
                    steps=options.steps, batch_size=options.batch_size or 0, lr=options.lr,
                    seed=options.seed, runner=self.name, options=stored)
        with by_state():  # the stored plan's types and batch, this server's devices and agents
            try:
                config = run_config(draft)
                compile_run(config)
            except InstanceError as exc:
                raise self.invalid(exc) from exc
            _check_agents(config.binding)
        return stored

    def describe(self, job: Job) -> str:
        binding = ", ".join(f"{k}={v}" for k, v in job.binding.items()) or "all on local cpu"
        return (f"{job.model_name} ({job.model_size}), {job.steps} steps of {job.batch_size}, "
                f"sync {job.sync_mode}, binding {binding}")

    def flushed_throughput(self, job: Job) -> float | None:
        plan = Plan.from_dict(job.plan)
        most = sync.bound(plan, job.sync_mode)
        if not most or not plan.throughput:
            return None
        # Scaled like the job's own estimate (it may be for another batch size).
        return job.predicted_throughput * most / plan.throughput

    def resume_point(self, job: Job) -> ResumePoint | None:
        step = newest_checkpoint(checkpoint_dir(job, job.runs), below=job.steps)
        return None if step is None else ResumePoint(run=job.runs, step=step)

    def execute(self, job: Job, run: RunContext) -> dict[str, Any]:
        # The job processes' template (runtime/template.py) imports torch while the run
        # compiles; a Celery pool process keeps one warm for its next job.
        template.prestart()
        try:
            return self._execute(job, run)
        finally:
            template.keep_warm()

    def _execute(self, job: Job, run: RunContext) -> dict[str, Any]:
        launcher = _launcher(job, run)
        start = launcher.spec.start_step
        run.log(f"starting {len(launcher.spec.ranks)} processes"
                + (f" at step {start}" if start else ""))
        try:
            launcher.start()
            if launcher.resume_notice:  # the newest checkpoint failed its verification
                run.log(launcher.resume_notice)
            _dispatch_remote_agents(launcher, run)
            result = launcher.wait()
        except RunCancelled as exc:
            run.log(str(exc))
            raise WorkCancelled from exc
        except RunPreempted as exc:  # a spot notice or a budget: the page says (preempted.py)
            preempted.record(job.pk, run.run, exc)
            raise
        except HeterPSError as exc:
            records.log(job.pk, f"run {run.run} failed: {exc}")
            raise
        summary = {
            "steps": result.steps, "start_step": result.start_step,
            "throughput": result.throughput, "elapsed_s": result.elapsed_s, "cost": result.cost,
            "final_loss": result.final_loss, "binding": result.binding,
            "checkpoint_step": result.checkpoint_step,
            "busy_s": {str(k): v for k, v in result.busy_s.items()},
            "idle_s": {str(k): v for k, v in result.idle_s.items()},
        }
        # The one measured definition, each stage next to the plan, the plan as it ran.
        # Like with like by provenance: the figures the plan was made with, where it ran.
        summary.update(run_summary(result, job.batch_size, sync.get(job.sync_mode).flushes,
                                   figure_tiers(job)))
        records.finish_run(
            job.pk, summary,
            f"run {run.run} finished: {result.throughput:.1f} samples/s measured "
            f"(plan {job.predicted_throughput:.1f}), ${summary['cost']:.4f} accrued",
        )
        measured.record_summary(job, run.run, summary)  # the run's measured profile, final
        return summary


def _launcher(job: Job, run: RunContext) -> Launcher:
    """The run's launcher; a restart that names a checkpoint resumes from it."""
    config = run_config(job, log_dir(job, run.run))
    resume = ResumePoint.from_params(run.work.params.get("resume"))
    if resume is not None:
        _take_checkpoint(job, run, resume)
        config = replace(config, resume=True)
    guard = Guard(job, run.run)  # drains the run before it passes a budget (budgets.guard)
    try:
        launcher = Launcher(config, sink=lambda sample: _store(job, run, sample.to_dict(), guard),
                            cancel=run.work.stop)  # set on cancel, shutdown or a lost lease
    except InstanceError as exc:
        if resume is None or exc.field.partition(".")[0] not in RESUME_FIELDS:
            raise
        # The runtime refuses a checkpoint of another plan, model or process count. The
        # copy goes, so the next restart starts from step 0 instead of failing again.
        unlink_step(checkpoint_dir(job, run.run), resume.step)
        raise _refused(job, run, f"cannot resume from {resume.text()}: {exc}") from exc
    guard.attach(launcher)
    return launcher


def _take_checkpoint(job: Job, run: RunContext, resume: ResumePoint) -> None:
    """Link the checkpoint a restart named into this run's own folder (the runtime then
    resumes from the newest complete one there)."""
    source = checkpoint_dir(job, resume.run)
    if newest_checkpoint(source, below=resume.step + 1) != resume.step:
        raise _refused(job, run, f"was to resume from {resume.text()}, which is no longer "
                       f"complete in {source} (removed, or not shared with this worker)")
    link_step(source, resume.step, checkpoint_dir(job, run.run))
    records.log(job.pk, f"run {run.run} resumes from {resume.text()}")


def _refused(job: Job, run: RunContext, why: str) -> RunError:
    # This run's folder holds no checkpoint now: a restart of it starts from step 0.
    message = f"run {run.run} {why}. Restart again to start from step 0."
    records.log(job.pk, message)
    return RunError(message)


def _store(job: Job, run: RunContext, data: dict[str, Any], guard: Guard) -> None:
    """A sample stored and published, its stage times kept as the run's measured profile so
    far (the closed loop works during a run too), then held against the budgets. Each stage
    says where it ran: a local target on this machine (the coordinator's); a remote one is
    known only from the run's result."""
    for stage in data.get("stages") or []:
        target = job.binding.get(str(stage.get("resource")), "cpu")
        stage["host"] = "" if target.startswith("remote") else this_host()
    run.store(data)
    measured.record_sample(job, run.run, data)
    guard.sample(data)


def _check_agents(binding: dict[str, Target]) -> None:
    """A `remote` type needs a worker agent: none can join an embedded server, and in
    production some Celery worker must consume the type's agent queue."""
    remote = sorted(name for name, target in binding.items() if target.is_remote)
    if not remote:
        return
    if settings.MODE.embedded_worker:
        raise ValidationError({f"binding.{name}": (
            f"{binding[name]} needs a worker agent, and this server runs in embedded mode "
            "(an in-process broker no other machine can reach); bind it to cpu, or run the "
            "server in production mode with agents") for name in remote})
    serving = broker.serving(remote)
    missing = [name for name in remote if name not in serving]
    if missing:
        raise ValidationError({f"binding.{name}": (
            f"{binding[name]} needs a worker agent for {name}, and no worker consumes its "
            f"queue {agents.queue_for(name)} (start `celery -A workers worker --queues "
            f"{agents.queue_for(name)}` on a machine that provides it)") for name in missing})


def _dispatch_remote_agents(launcher: Launcher, run: RunContext) -> None:
    """Ask the worker machines that provide the plan's `remote` types to host their stages."""
    remote = agents.remote_units(launcher.spec)
    if not remote:
        return
    try:
        broker.dispatch_agents(
            agents.coordinator_address(launcher.address, launcher.config.host), remote)
        run.log(f"waiting for agents of {', '.join(remote)}")
    except Exception as exc:  # broker down: wait() then fails naming the missing types
        run.log(f"could not enqueue agents: {exc}")


def _resources(plan: Plan) -> list[str]:
    return sorted({s.resource for s in plan.stages})


def _binding_text(binding: dict[str, str]) -> str:
    return ",".join(f"{name}={target}" for name, target in binding.items())
