"""How a job runs: one small class per runner (`base.JobRunner`), one registry of instances
(stateless: one of each is enough), in the order the approve form lists them.

Adding a runner: a `JobRunner` subclass in `runners/NAME.py` (its input's form and
serializer, clean, describe, execute; its page part) and one line below. The registry sits
above the models: code that needs a job's runner asks `for_job(job)`, never the model.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

from heterps_core.registry import Registry, UnknownName
from webapp.jobs.models import Job
from webapp.jobs.runners.base import JobRunner, RunContext
from webapp.jobs.runners.dataparallel import DataParallelRunner
from webapp.jobs.runners.pipeline import PipelineRunner

RUNNERS: Registry[JobRunner] = Registry("runner", ordered=True)
RUNNERS.add(PipelineRunner.name, PipelineRunner())
RUNNERS.add(DataParallelRunner.name, DataParallelRunner())

__all__ = ["RUNNERS", "JobRunner", "RunContext", "choices", "for_job", "get"]


def get(name: str) -> JobRunner:
    """The runner `name`; an unknown one is a ValidationError on the `runner` field."""
    try:
        return RUNNERS.get(name)
    except UnknownName as exc:
        raise ValidationError(
            {"runner": f"must be one of {', '.join(exc.known)}, got {name!r}"}) from None


def for_job(job: Job) -> JobRunner:
    return get(job.runner)


def choices() -> list[tuple[str, str]]:
    return RUNNERS.choices(lambda runner: runner.label)
