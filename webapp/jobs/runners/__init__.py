"""How a job runs: one small class per runner (`base.JobRunner`), one registry.

Adding a runner: a `JobRunner` subclass in `runners/NAME.py` (clean its options, describe a
job, execute a run, build its page section `templates/jobs/runners/NAME.html`) and one line
in `RUNNERS`.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

from webapp.jobs.runners.base import JobRunner, RunContext
from webapp.jobs.runners.dataparallel import DataParallelRunner
from webapp.jobs.runners.pipeline import PipelineRunner

RUNNERS: dict[str, JobRunner] = {
    runner.name: runner for runner in (PipelineRunner(), DataParallelRunner())
}

__all__ = ["RUNNERS", "JobRunner", "RunContext", "choices", "get"]


def get(name: str) -> JobRunner:
    try:
        return RUNNERS[name]
    except KeyError:
        raise ValidationError(
            {"runner": f"must be one of {', '.join(RUNNERS)}, got {name!r}"}) from None


def choices() -> list[tuple[str, str]]:
    return [(name, runner.label) for name, runner in RUNNERS.items()]
