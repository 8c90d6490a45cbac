"""`{% load joblog %}`: the job page's log section reads the tail of the latest run's log
file (`runlog`); the whole of it, and earlier runs', are on the log page (`jobs:log`)."""

from __future__ import annotations

from django import template

from webapp.jobs import runlog
from webapp.jobs.models import Job

register = template.Library()


@register.filter
def run_log(job: Job) -> runlog.Tail:
    """The end of the job's latest run's log (`runlog.TAIL_BYTES`)."""
    return runlog.tail(job, runlog.current_run(job))


@register.filter
def earlier_runs(job: Job) -> range:
    """The runs before the latest, whose logs the page links to."""
    return range(1, runlog.current_run(job))
