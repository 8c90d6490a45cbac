"""What the dashboard shows: running jobs, recent plans, this month's cost."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import QuerySet

from webapp.costs import services as costs
from webapp.jobs.models import ACTIVE, Job
from webapp.projects.permissions import AnyUser, visible

RUNNING_LIMIT = 20
RECENT_PLANS = 10


def running_jobs(user: AnyUser) -> QuerySet[Job]:
    jobs = visible(user, Job.objects.select_related("project", "work"))
    return jobs.filter(work__status__in=ACTIVE).defer(
        "plan", "summary", "options"
    )[:RUNNING_LIMIT]


def recent_plans(user: AnyUser) -> list[Any]:
    """The planning app's newest results (nothing while planning is not installed)."""
    try:
        model = apps.get_model("planning", "PlanResult")
    except LookupError:
        return []
    rows = visible(user, model.objects.select_related("project", "request__model"))
    return list(rows.defer("plan").order_by("-pk")[:RECENT_PLANS])


def month_costs(user: AnyUser, period: costs.Period) -> dict[str, float]:
    report = costs.report(user, period)
    return {"estimate": report.estimate, "accrued": report.accrued, "jobs": len(report.rows)}
