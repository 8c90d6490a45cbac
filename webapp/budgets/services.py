"""Budget rules for the pages and the API: setting a job's budget, refusing a run whose budget
is spent, and what the job page, the project page and the dashboard show. A project's own
budget is set by its owners (`projects.services.set_budget`)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from webapp.budgets import spend
from webapp.budgets.models import BudgetAlert
from webapp.jobs.models import Job
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check, visible
from webapp.projects.services import checked_budget
from webapp.refusals import StateRefusal

FIELD = "budget"


def set_job_budget(user: AnyUser, job: Job, value: Any) -> Job:
    """Members and owners set (or clear, None) a job's budget; it holds from the next sample."""
    check(user, job.project_id, Action.EDIT)
    budget = checked_budget(value)
    Job.objects.filter(pk=job.pk).update(budget=budget)
    job.budget = budget
    return job


def refuse_spent(job: Job) -> None:
    """StateRefusal (a ValidationError; the API's 409) on `budget` when the job's budget or
    its project's is reached: a run now would be stopped by its guard within seconds."""
    verdict = spend.verdict(job.pk, job.predicted_cost_per_hour)
    if verdict.scope == spend.JOB:
        raise StateRefusal({FIELD: (
            f"budget: the job's budget ${verdict.job.budget:.2f} is spent "
            f"(${verdict.job.spent:.4f} accrued over its runs); raise the job's budget to "
            "run it again")})
    if verdict.scope == spend.PROJECT:
        raise StateRefusal({FIELD: (
            f"budget: the project's budget ${verdict.project.budget:.2f} is spent "
            f"(${verdict.project.spent:.4f} accrued by its jobs); a project owner can "
            "raise it")})


def job_page(job: Job) -> dict[str, Any]:
    """The job page's budget line: budget, spent and share, and the project's."""
    return {"job_budget": spend.job_standing(job),
            "project_budget": spend.project_standing(job.project_id, job.project.budget)}


def project_page(project: Project) -> dict[str, Any]:
    return {"project_budget": spend.project_standing(project.pk, project.budget),
            "budget_alerts": alerts_of(BudgetAlert.objects.filter(project=project))}


def dashboard(user: AnyUser) -> list[BudgetAlert]:
    """The newest notices of every project the user sees (members of every role)."""
    return alerts_of(visible(user, BudgetAlert.objects.all()))


def alerts_of(rows: QuerySet[BudgetAlert], count: int = 10) -> list[BudgetAlert]:
    return list(rows.select_related("project", "job").order_by("-created_at", "-id")[:count])
