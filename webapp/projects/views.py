"""Project pages: thin views over `webapp.projects.services` and the permission helper."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.background.forms import EvaluateForm
from webapp.background.models import Work
from webapp.catalogue import services as catalogue
from webapp.catalogue.forms import ResourceTypeForm
from webapp.catalogue.models import ResourceType
from webapp.middleware import AuthenticatedRequest
from webapp.projects import services
from webapp.projects.forms import ProjectForm
from webapp.projects.permissions import Action, can, get_project, role_of


def create(request: AuthenticatedRequest) -> HttpResponse:
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = services.create_project(
                request.user, form.cleaned_data["name"], form.cleaned_data["description"]
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("projects:detail", pk=project.pk)
    return render(request, "projects/create.html", {"form": form})


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_project(request.user, pk)
    context = {
        "project": project,
        "role": role_of(request.user, project),
        "can_edit": can(request.user, project, Action.EDIT),
        "memberships": project.memberships.select_related("user"),
        "resource_types": ResourceType.objects.filter(project=project)
        .prefetch_related("clusters"),
        "resource_form": ResourceTypeForm(),
        "hardware": catalogue.hardware_catalogue(),
        "work": Work.objects.filter(project=project)[:20],
        "evaluate_form": EvaluateForm.demo(),
    }
    return render(request, "projects/detail.html", context)
