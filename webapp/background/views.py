"""Background-work pages: start one, watch it live, cancel it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.background import services
from webapp.background.forms import EvaluateForm
from webapp.background.models import Work
from webapp.middleware import AuthenticatedRequest
from webapp.projects.permissions import Action, can, get_owned, get_project


@require_POST
def start_evaluate(request: AuthenticatedRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = EvaluateForm(request.POST)
    if form.is_valid():
        try:
            work = services.start_work(request.user, project, "evaluate", form.params())
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                form.add_error(None, f"{field}: {'; '.join(problems)}")
        else:
            return redirect("background:detail", pk=work.pk)
    return render(request, "background/start.html", {"project": project, "form": form},
                  status=400)


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    work = get_owned(request.user, Work.objects.select_related("project"), pk)
    context = {
        "work": work,
        "state": services.state(work),
        "can_edit": can(request.user, work.project_id, Action.EDIT),
    }
    return render(request, "background/detail.html", context)


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    work = get_owned(request.user, Work.objects.all(), pk, Action.EDIT)
    services.cancel_work(request.user, work)
    return redirect("background:detail", pk=pk)
