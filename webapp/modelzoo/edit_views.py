"""A model's edit page (name, description, default batch size) and its delete button
(`webapp.modelzoo.editing`)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.modelzoo import editing
from webapp.modelzoo.forms import EditModelForm, add_service_errors
from webapp.modelzoo.models import RegisteredModel
from webapp.projects.permissions import Action, get_owned


def edit(request: HttpRequest, pk: int) -> HttpResponse:
    model = get_owned(request.user, RegisteredModel.objects.select_related("project"), pk,
                      Action.EDIT)
    initial = {"name": model.name, "description": model.description,
               "default_batch_size": model.default_batch_size}
    form = EditModelForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            editing.update_model(request.user, model, data["name"], data["description"],
                                 data["default_batch_size"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved model {model.name}.")
            return redirect("modelzoo:detail", pk=model.pk)
    return render(request, "modelzoo/edit.html",
                  {"model": model, "form": form, "goes": editing.what_goes(model)},
                  status=400 if request.method == "POST" else 200)


@require_POST
def delete(request: HttpRequest, pk: int) -> HttpResponse:
    model = get_owned(request.user, RegisteredModel.objects.select_related("project"), pk,
                      Action.EDIT)
    try:
        editing.delete_model(request.user, model)
    except ValidationError as exc:
        for problems in exc.message_dict.values():
            messages.error(request, "; ".join(problems))
        return redirect("modelzoo:edit", pk=model.pk)
    messages.success(request, f"Deleted model {model.name}.")
    return redirect("modelzoo:list", project_pk=model.project_id)
