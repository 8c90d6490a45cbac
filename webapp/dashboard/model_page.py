"""One model's page: its latest profile's layer table and chart, its profile runs, and what
finished jobs measured per layer group. It shows profiling and jobs records, so it sits
here, above those apps (docs/architecture.md)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.jobs import measured
from webapp.modelzoo.forms import ProfileForm
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling.models import ProfileRun
from webapp.profiling.services import latest_profile, layer_chart, layer_table
from webapp.projects.permissions import Action, can, get_owned


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    model = get_owned(request.user, RegisteredModel.objects.select_related("project"), pk)
    run = latest_profile(model)
    table = layer_table(run)
    context = {
        "model": model,
        "project": model.project,
        "can_edit": can(request.user, model.project_id, Action.EDIT),
        "run": run,
        "table": table,
        "chart": layer_chart(table),
        "runs": ProfileRun.objects.filter(model=model).select_related("work")[:10],
        # What finished runs measured per layer group, next to the plan (issue 16).
        "measured": measured.for_model(model.project_id, model.runtime_model, model.size,
                                       model.layer_names()) if model.runtime_model else [],
        "measured_threshold_pct": 100 * measured.threshold(),
        "profile_form": ProfileForm(initial={"batch_size": model.default_batch_size,
                                             "repeats": 3}),
    }
    return render(request, "modelzoo/detail.html", context)
