"""The cost report page and its CSV export."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render

from webapp.bounds import query_id
from webapp.costs import services
from webapp.projects.models import Project
from webapp.projects.permissions import get_project, visible_projects


def report(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"projects": visible_projects(request.user)}
    try:
        period, project = _inputs(request)
    except ValidationError as exc:
        # A bad month or project shows the problem, never another month's figures.
        context.update(report=None, error=_sentence(exc),
                       month=request.GET.get("month", "")[:7])
        return render(request, "costs/report.html", context, status=400)
    result = services.report(request.user, period, project.pk if project else None)
    context.update(report=result, month=period.start.strftime("%Y-%m"), project=project)
    return render(request, "costs/report.html", context)


def export(request: HttpRequest) -> HttpResponse:
    try:
        period, project = _inputs(request)
    except ValidationError as exc:
        return HttpResponseBadRequest(_sentence(exc) + "\n", content_type="text/plain")
    result = services.report(request.user, period, project.pk if project else None)
    response = HttpResponse(services.to_csv(result), content_type="text/csv")
    name = f"heterps-costs-{period.start:%Y-%m}{f'-project-{project.pk}' if project else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _inputs(request: HttpRequest) -> tuple[services.Period, Project | None]:
    """The month and project asked for; ValidationError naming the parameter."""
    period = services.month(request.GET.get("month"))
    raw = query_id(request.GET, "project")
    project = get_project(request.user, raw) if raw else None
    return period, project


def _sentence(exc: ValidationError) -> str:
    return "; ".join(f"{field}: {' '.join(problems)}"
                     for field, problems in exc.message_dict.items())
