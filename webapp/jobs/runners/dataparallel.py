"""The data-parallel runner: trains the plan's model on N workers with a sync mode of
`heterps_core.dataparallel` (emulated time, or one process per worker).

Its input (`inputs.dataparallel`): `sync_mode`, `sync_params` and `dataparallel` (workers,
slowdowns, backend). Stored options (the core's names): `sync` (the mode, under the key the
pipeline runner uses too) and its `params` (defaults filled in by the mode itself), and
`TrainConfig`'s `workers`, `slowdowns` and `backend`. The core validates all of them;
its `DataParallelError` fields are kept (`mode.ssp.staleness`) or put under `dataparallel.`
(`dataparallel.slowdowns`), the option group a person set them in.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from heterps_core import zoo
from heterps_core.dataparallel import DataParallelError, TrainConfig, modes, train
from heterps_core.errors import HeterPSError
from heterps_core.plan import Plan
from heterps_core.runtime.errors import RunPreempted
from heterps_core.runtime.throughput import DEFINITION
from webapp.background.context import WorkCancelled
from webapp.budgets.guard import Guard
from webapp.budgets.spend import SAMPLE_S
from webapp.jobs import preempted, records
from webapp.jobs.inputs.dataparallel import (
    DEFAULT_SYNC,
    DEFAULT_WORKERS,
    DataParallelOptionsForm,
    DataParallelOptionsSerializer,
)
from webapp.jobs.models import Job
from webapp.jobs.options import DATAPARALLEL, PlanSource, RunOptions
from webapp.jobs.pages.dataparallel import DataParallelPage, time_unit
from webapp.jobs.runners.base import JobRunner, RunContext
from webapp.jobs.runners.sampler import Sampler

SETTINGS = ("workers", "slowdowns", "backend")  # the options that are TrainConfig's


def parse_slowdowns(text: str) -> tuple[float, ...]:
    """'1, 1, 4' -> (1.0, 1.0, 4.0); blank means every worker at full speed."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise ValidationError({"dataparallel.slowdowns": (
            f"must be numbers separated by commas, e.g. 1,1,4; got {text!r}")}) from None


def train_config(options: Mapping[str, Any], steps: int, batch_size: int, lr: float,
                 seed: int) -> TrainConfig:
    try:
        return TrainConfig(
            workers=options["workers"], slowdowns=tuple(options.get("slowdowns") or ()),
            backend=options.get("backend", "emulated"), max_steps=steps,
            batch_size=batch_size, lr=lr, seed=seed,
        )
    except DataParallelError as exc:
        field = exc.field if exc.field.startswith("mode") else f"dataparallel.{exc.field}"
        raise ValidationError({field: exc.problem}) from exc


class DataParallelRunner(JobRunner):
    name = DATAPARALLEL
    label = "data-parallel run of the plan's model"
    script = "js/job_dataparallel.js"
    options_form = DataParallelOptionsForm
    options_serializer = DataParallelOptionsSerializer
    page = DataParallelPage()

    def clean(self, options: RunOptions, source: PlanSource, plan: Plan) -> dict[str, Any]:
        mode = options.options.get("sync_mode") or DEFAULT_SYNC
        try:
            params = dict(modes.create(mode, options.options.get("sync_params") or {}).p)
        except DataParallelError as exc:
            raise ValidationError({exc.field: exc.problem}) from exc
        given = options.options.get("dataparallel") or {}
        slowdowns = given.get("slowdowns") or ()
        if isinstance(slowdowns, str):
            slowdowns = parse_slowdowns(slowdowns)
        elif not isinstance(slowdowns, list | tuple):
            raise ValidationError({"dataparallel.slowdowns": (
                f"must be a list of factors or text like 1,1,4; got {slowdowns!r}")})
        stored: dict[str, Any] = {
            "sync": mode, "params": params,
            "workers": given.get("workers", DEFAULT_WORKERS), "slowdowns": list(slowdowns),
            "backend": given.get("backend", "emulated"),
        }
        assert options.batch_size is not None
        train_config(stored, options.steps, options.batch_size, options.lr, options.seed)
        stored["slowdowns"] = [float(s) for s in stored["slowdowns"]]  # checked numbers by now
        return stored

    def describe(self, job: Job) -> str:
        dp = job.dataparallel
        slow = ",".join(f"{s:g}" for s in dp.get("slowdowns") or []) or "none"
        return (f"{job.model_name} ({job.model_size}) data-parallel, {job.steps} steps of "
                f"{job.batch_size} per worker, sync {job.sync_mode} {job.sync_params}, "
                f"{dp.get('workers')} workers, slowdowns {slow}, backend {dp.get('backend')}")

    def execute(self, job: Job, run: RunContext) -> dict[str, Any]:
        """The job's model trained data-parallel; its down-sampled samples are stored and
        published exactly like the runtime's."""
        options = job.options
        run.log(f"data-parallel {job.sync_mode} on {options.get('workers')} workers "
                f"({options.get('backend')} backend)")
        switch_logged = False
        guard = Guard(job, run.run)  # stops the run before it passes a budget
        over_budget = threading.Event()
        guard.attach_stop(lambda reason: over_budget.set())

        def emit(sample: dict[str, Any]) -> None:
            nonlocal switch_logged
            if sample.get("switch") and not switch_logged:
                switch_logged = True
                s = sample["switch"]
                run.log(f"{s['previous']} -> {s['phase']} at {s['time_s']:.4f} s, "
                        f"step {s['global_step']} ({s['reason']})")
            run.store(sample)
            guard.sample({**sample, "cost_per_hour": job.predicted_cost_per_hour})

        model = zoo.get(job.model_name)
        config = train_config(options, job.steps, job.batch_size, job.lr, job.seed)
        # Wall-clock runs also sample every SAMPLE_S: the page and the budget see them live.
        every_s = SAMPLE_S if options.get("backend") == "process" else None
        sampler = Sampler(config.workers, job.steps, job.predicted_cost_per_hour, emit, every_s)
        try:
            result = train(model, model.config(job.model_size),
                           modes.create(options["sync"], options["params"]), config,
                           metrics=sampler,
                           cancel=lambda: run.stop() or over_budget.is_set())
            sampler.flush()
        except HeterPSError as exc:
            records.log(job.pk, f"run {run.run} failed: {exc}")
            raise
        if result.stopped == "cancelled" and guard.reason is not None:
            # Recorded as the pipeline's budget drain is; no checkpoint: a restart starts over.
            stopped = RunPreempted(result.global_steps, None, guard.reason)
            preempted.record(job.pk, run.run, stopped)
            raise stopped
        if result.stopped == "cancelled":
            run.log(f"cancelled at step {result.global_steps}")
            raise WorkCancelled("cancelled")
        summary = result.to_dict()
        evals, elapsed = summary["evals"], summary["time_s"]
        measured = sampler.meter.result()  # the one definition, as the pipeline's runs
        summary.update({
            "steps": summary["global_steps"], "elapsed_s": elapsed,
            "throughput": measured.per_s, "throughput_definition": DEFINITION,
            "samples_in_span": measured.samples, "span_s": measured.span_s,
            "startup_s": measured.startup_s, "samples": sampler.samples,
            "cost": job.predicted_cost_per_hour * elapsed / 3600,
            "final_loss": evals[-1]["loss"] if evals else None,
        })
        unit = time_unit(job)
        loss = "-" if summary["final_loss"] is None else f"{summary['final_loss']:.4f}"
        records.finish_run(
            job.pk, summary,
            f"run {run.run} finished: {summary['steps']} steps in {elapsed:.3f} {unit}, "
            f"{measured.per_s or 0.0:.1f} samples/s measured (first to last finished step), "
            f"held-out loss {loss}",
        )
        return summary
