"""Resource-type pages: add (from the hardware catalogue or from scratch), edit, delete.
Thin: the permission helper fetches, `webapp.catalogue.services` decides."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.catalogue import services
from webapp.catalogue.forms import ResourceTypeForm
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.forms import add_service_errors
from webapp.projects.permissions import Action, get_owned, get_project


def create(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = ResourceTypeForm(request.POST or None, initial=_initial(request))
    if request.method == "POST" and form.is_valid():
        try:
            resource_type = services.create(request.user, project, form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Added resource type {resource_type.name}.")
            return redirect("projects:detail", pk=project.pk)
    return _render(request, "catalogue/form.html", form, project=project,
                   status=400 if request.method == "POST" else 200)


def edit(request: HttpRequest, pk: int) -> HttpResponse:
    resource_type = get_owned(request.user, ResourceType.objects.select_related("project"), pk,
                              Action.EDIT)
    initial = {f: getattr(resource_type, f) for f in services.ALL_FIELDS}
    form = ResourceTypeForm(request.POST or None, initial=initial, with_template=False)
    if request.method == "POST" and form.is_valid():
        try:
            services.update(request.user, resource_type, form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved resource type {resource_type.name}.")
            return redirect("projects:detail", pk=resource_type.project_id)
    return _render(request, "catalogue/form.html", form, project=resource_type.project,
                   resource_type=resource_type, usage=services.usage(resource_type),
                   status=400 if request.method == "POST" else 200)


@require_POST
def delete(request: HttpRequest, pk: int) -> HttpResponse:
    resource_type = get_owned(request.user, ResourceType.objects.select_related("project"), pk,
                              Action.EDIT)
    try:
        services.delete(request.user, resource_type)
    except ValidationError as exc:
        for problem in exc.messages:
            messages.error(request, f"{resource_type.name} was not deleted: {problem}")
    else:
        messages.success(request, f"Deleted resource type {resource_type.name}.")
    return redirect("projects:detail", pk=resource_type.project_id)


def _initial(request: HttpRequest) -> dict[str, Any]:
    return {"template": request.GET.get("template", "")}


def _render(request: HttpRequest, template_name: str, form: ResourceTypeForm,
            status: int = 200, **context: Any) -> HttpResponse:
    context.update(form=form, hardware=services.hardware_catalogue())
    return render(request, template_name, context, status=status)
