"""Project pages: thin views over `webapp.projects.services` and the permission helper."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render

from webapp.middleware import AuthenticatedRequest
from webapp.projects import services
from webapp.projects.forms import ProjectForm


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
