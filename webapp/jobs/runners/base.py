"""The runner interface, and what a run is handed (`RunContext`).

A runner is how a job executes: it names the input a person gives it (its form and
serializer), cleans that input into the job's stored `options` (the core's names, the core's
validation), describes a job in one line and executes one run (storing and publishing
samples through the context); it names its part of the job page. The web app never branches
on the kind of job: it asks the registry for the job's runner (`runners.for_job`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from rest_framework import serializers

from heterps_core.errors import InstanceError
from heterps_core.plan import Plan
from webapp.background.context import WorkContext
from webapp.jobs import records
from webapp.jobs.inputs.base import OptionsForm
from webapp.jobs.models import Job
from webapp.jobs.options import PlanSource, RunOptions
from webapp.jobs.pages.base import RunnerPage
from webapp.jobs.runners.resume import ResumePoint


@dataclass
class RunContext:
    """One run of one job: its number, earlier runs' cost, and the work record's context."""

    job: Job
    run: int
    base_cost: float  # accrued by earlier runs, as it stood when this run started
    work: WorkContext

    def log(self, line: str) -> None:
        records.log(self.job.pk, f"run {self.run}: {line}")

    def store(self, data: dict[str, Any]) -> None:
        """Store a sample once (a JobMetric row and the job's totals, with the work record's
        progress) and publish it once, after the commit (`records.store_sample`)."""
        records.store_sample(self.job, self.run, self.base_cost, self.work, data)

    @property
    def stop(self) -> Callable[[], bool]:
        return self.work.stop.is_set


class JobRunner:
    """One way to execute a job; see the module docstring. Register in `runners/__init__`."""

    name: ClassVar[str]
    label: ClassVar[str]
    # What a person gives it: its own approve-form fields and API serializer, whose cleaned
    # values are `RunOptions.options` (`webapp.jobs.inputs`).
    options_form: ClassVar[type[OptionsForm]]
    options_serializer: ClassVar[type[serializers.Serializer]]
    # Its part of the job page (`webapp.jobs.pages`) and a page script of its own, if any.
    page: ClassVar[RunnerPage] = RunnerPage()
    script: ClassVar[str] = ""
    # Its runs hold the plan's stages on the plan's prices: the page splits the accrued cost
    # per stage, and measured stage times can re-plan the plan.
    accrues_per_stage: ClassVar[bool] = False
    can_replan: ClassVar[bool] = False
    # Core field -> the option it came from, for errors (`bind.cpu` -> `binding.cpu`).
    error_fields: ClassVar[Mapping[str, str]] = {}

    def clean(self, options: RunOptions, source: PlanSource, plan: Plan) -> dict[str, Any]:
        """The job's stored `options` JSON from `options.options` (the runner's input),
        validated by the core; ValidationError naming the input's field."""
        raise NotImplementedError

    def describe(self, job: Job) -> str:
        raise NotImplementedError

    def execute(self, job: Job, run: RunContext) -> dict[str, Any]:
        """Run the job once to its end; return the summary stored on the job."""
        raise NotImplementedError

    def resume_point(self, job: Job) -> ResumePoint | None:
        """Where a restart of `job` continues from: a checkpoint its latest run left behind
        (asked only when that run failed or was cancelled). None: from step 0."""
        return None

    def flushed_throughput(self, job: Job) -> float | None:
        """The estimate this run can reach at most when below the plan's (else None); stored
        on the job when it is approved."""
        return None

    def invalid(self, exc: InstanceError) -> ValidationError:
        """The core's error keyed by the option a person set."""
        head, dot, rest = exc.field.partition(".")
        return ValidationError({f"{self.error_fields.get(head, head)}{dot}{rest}": exc.problem})
