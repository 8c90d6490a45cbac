"""The budget forms of the job page (members, owners) and the project page (owners): each
posts one `budget` field and goes back to its page, which shows what was refused and why."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from webapp.budgets import services
from webapp.jobs.models import Job
from webapp.projects.permissions import Action, get_owned, get_project
from webapp.projects.services import set_budget


@require_POST
def job_budget(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_owned(request.user, Job.objects.all(), pk, Action.EDIT)
    _set(request, lambda value: services.set_job_budget(request.user, job, value), "job")
    return redirect("jobs:detail", pk=pk)


@require_POST
def project_budget(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_project(request.user, pk, Action.MANAGE)
    _set(request, lambda value: set_budget(request.user, project, value), "project")
    return redirect("projects:detail", pk=pk)


def _set(request: HttpRequest, act: Any, whose: str) -> None:
    value = request.POST.get("budget", "").strip()
    try:
        act(_number(value))
    except ValidationError as exc:
        for field, problems in exc.message_dict.items():
            messages.error(request, f"{field}: {'; '.join(problems)}")
        return
    messages.success(request, f"The {whose}'s budget is now ${float(value):.2f}." if value
                     else f"The {whose} has no budget now.")


def _number(text: str) -> float | str | None:
    """The form's text as a number for the service's check ('' clears; what is no number
    stays text, which the check refuses naming the field)."""
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return text
