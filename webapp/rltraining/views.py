"""RL training pages: start a run on a planning request, watch its reward curve live."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.background.services import state
from webapp.modelzoo.forms import add_service_errors
from webapp.planning.forms import RLTrainingForm
from webapp.planning.models import PlanningRequest
from webapp.projects.permissions import Action, can, get_owned
from webapp.rltraining import services
from webapp.rltraining.models import RLTrainingRun


@require_POST
def start(request: HttpRequest, request_pk: int) -> HttpResponse:
    planning = get_owned(request.user, PlanningRequest.objects.select_related("project"),
                         request_pk, Action.EDIT)
    form = RLTrainingForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            run = services.start_training(request.user, planning, data["budget_s"],
                                          data["max_updates"], data["samples"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("rltraining:detail", pk=run.pk)
    return render(request, "rltraining/start.html", {"planning": planning, "form": form},
                  status=400)


@require_POST
def approve(request: HttpRequest, pk: int) -> HttpResponse:
    """The best plan goes to the jobs app's approve page (binding, steps, sync mode)."""
    run = get_owned(request.user, RLTrainingRun.objects.select_related("request"), pk,
                    Action.EDIT)
    try:
        result = services.approvable_result(request.user, run)
    except ValidationError as exc:
        for problem in exc.messages:
            messages.error(request, problem)
        return redirect("rltraining:detail", pk=run.pk)
    return redirect("jobs:approve", result.pk)


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned(request.user,
                    RLTrainingRun.objects.select_related("project", "work", "request__model"), pk)
    context = {
        "run": run,
        "planning": run.request,
        "work": run.work,
        "state": state(run.work) if run.work else None,
        "curve": run.curve,
        "can_edit": can(request.user, run.project_id, Action.EDIT),
        "exact": run.request.results.filter(scheduler="exact").first(),
        "work_active": run.work is not None and run.work.status in ("queued", "running",
                                                                     "cancelling"),
    }
    return render(request, "rltraining/detail.html", context)
