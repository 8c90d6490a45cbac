"""Profiling pages: start a profile run of a model, watch it live, read its results."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.background.services import state
from webapp.modelzoo.forms import ProfileForm, add_service_errors
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling import services
from webapp.profiling.models import ProfileRun
from webapp.projects.permissions import Action, can, get_owned


@require_POST
def start(request: HttpRequest, model_pk: int) -> HttpResponse:
    model = get_owned(request.user, RegisteredModel.objects.select_related("project"), model_pk,
                      Action.EDIT)
    form = ProfileForm(request.POST)
    if form.is_valid():
        try:
            run = services.start_profile(request.user, model, form.cleaned_data["batch_size"],
                                         form.cleaned_data["repeats"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("profiling:detail", pk=run.pk)
    return render(request, "profiling/start.html", {"model": model, "form": form}, status=400)


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned(request.user,
                    ProfileRun.objects.select_related("project", "model", "work"), pk)
    table = services.layer_table(run)
    context = {
        "run": run,
        "model": run.model,
        "work": run.work,
        "state": state(run.work) if run.work else None,
        "can_edit": can(request.user, run.project_id, Action.EDIT),
        "table": table,
        "origins": list(run.origins.order_by("id")),
        "measurement": services.measurement(run),
        "chart": services.layer_chart(table),
    }
    return render(request, "profiling/detail.html", context)
