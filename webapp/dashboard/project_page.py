"""The project page: members, resource types, its budget and notices, recent work and the
quick evaluate form. It shows several apps' records, so it sits here, above them all
(docs/architecture.md)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.background.forms import EvaluateForm
from webapp.background.models import Work
from webapp.budgets import services as budgets
from webapp.catalogue import services as catalogue
from webapp.catalogue.forms import ResourceTypeForm
from webapp.catalogue.models import ResourceType
from webapp.projects.permissions import Action, can, get_project, role_of


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
        **budgets.project_page(project),
    }
    return render(request, "projects/detail.html", context)
