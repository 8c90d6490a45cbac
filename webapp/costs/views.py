"""The cost report page and its CSV export."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.costs import services
from webapp.projects.models import Project
from webapp.projects.permissions import get_project, visible_projects


def report(request: HttpRequest) -> HttpResponse:
    period, project = _inputs(request)
    result = services.report(request.user, period, project.pk if project else None)
    context = {
        "report": result,
        "month": period.start.strftime("%Y-%m"),
        "project": project,
        "projects": visible_projects(request.user),
    }
    return render(request, "costs/report.html", context)


def export(request: HttpRequest) -> HttpResponse:
    period, project = _inputs(request)
    result = services.report(request.user, period, project.pk if project else None)
    response = HttpResponse(services.to_csv(result), content_type="text/csv")
    name = f"heterps-costs-{period.start:%Y-%m}{f'-project-{project.pk}' if project else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _inputs(request: HttpRequest) -> tuple[services.Period, Project | None]:
    try:
        period = services.month(request.GET.get("month"))
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        period = services.month(None)
    raw = request.GET.get("project")
    project = get_project(request.user, raw) if raw and raw.isdigit() else None
    return period, project
