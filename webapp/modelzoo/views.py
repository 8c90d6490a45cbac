"""Model pages: the project's models and the zoo, import (one model's page, with its
profiles and measured times: webapp/dashboard/model_page.py)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.modelzoo import services
from webapp.modelzoo.forms import (
    AddZooModelForm,
    FactoryModelForm,
    ImportModelForm,
    add_service_errors,
)
from webapp.modelzoo.models import RegisteredModel
from webapp.projects.models import Project
from webapp.projects.permissions import Action, can, get_project, visible_projects


def index(request: HttpRequest) -> HttpResponse:
    projects = list(visible_projects(request.user))
    if len(projects) == 1:
        return redirect("modelzoo:list", project_pk=projects[0].pk)
    return render(request, "modelzoo/index.html", {"projects": projects})


def model_list(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk)
    return _render_list(request, project, AddZooModelForm(), ImportModelForm())


@require_POST
def add(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = AddZooModelForm(request.POST)
    if form.is_valid():
        try:
            model = services.add_zoo_model(request.user, project, form.cleaned_data["zoo_name"],
                                           form.cleaned_data["size"], form.cleaned_data["name"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("modelzoo:detail", pk=model.pk)
    return _render_list(request, project, form, ImportModelForm(), status=400)


@require_POST
def add_factory(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = FactoryModelForm(request.POST, prefix="own")
    if form.is_valid():
        data = form.cleaned_data
        try:
            model = services.add_factory_model(request.user, project, data["factory"],
                                               data["name"], data["example_input"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("modelzoo:detail", pk=model.pk)
    return _render_list(request, project, AddZooModelForm(), ImportModelForm(), status=400,
                        factory_form=form)


@require_POST
def import_model(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = ImportModelForm(request.POST)
    if form.is_valid():
        try:
            model = services.import_model(request.user, project, form.cleaned_data["name"],
                                          form.cleaned_data["layers"],
                                          form.cleaned_data["description"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("modelzoo:detail", pk=model.pk)
    return _render_list(request, project, AddZooModelForm(), form, status=400)


def _render_list(request: HttpRequest, project: Project, add_form: AddZooModelForm,
                 import_form: ImportModelForm, status: int = 200,
                 factory_form: FactoryModelForm | None = None) -> HttpResponse:
    context = {
        "factory_form": factory_form or FactoryModelForm(prefix="own"),
        "project": project,
        "models": RegisteredModel.objects.filter(project=project),
        "zoo": services.zoo_catalogue(),
        "can_edit": can(request.user, project, Action.EDIT),
        "add_form": add_form,
        "import_form": import_form,
    }
    return render(request, "modelzoo/list.html", context, status=status)

