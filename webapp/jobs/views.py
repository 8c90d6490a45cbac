"""Job pages: approve a plan, the job list, the live job page, cancel and restart."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from heterps_core.plan import Plan
from heterps_core.runtime.compile import whole_steps
from webapp.budgets import services as budgets
from webapp.jobs import (
    accrual,
    figures,
    interruptions,
    page_series,
    preempted,
    recovery,
    replan,
    runners,
    services,
)
from webapp.jobs.forms import ApproveForm
from webapp.jobs.models import Job
from webapp.jobs.pages import detail as detail_page
from webapp.jobs.throughput import measured, measured_many
from webapp.middleware import AuthenticatedRequest
from webapp.projects.permissions import Action, can, get_owned, visible

# The planning app's per-scheduler result (read through `services.source_of`).
PLAN_RESULT_MODEL = ("planning", "PlanResult")


def job_list(request: HttpRequest) -> HttpResponse:
    jobs = visible(request.user, Job.objects.select_related("project", "work")).defer(
        "plan", "summary", "options"
    )
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    figures = measured_many(rows)  # a latest run that trained nothing shows the one before
    for job in rows:
        job.measured_figure = figures.get(job.pk)  # type: ignore[attr-defined]
    return render(request, "jobs/list.html", {"page": page, "jobs": rows})


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_owned(request.user, Job.objects.select_related("project", "work"), pk)
    series = services.metrics_series(job)
    context = {
        "job": job,
        "plan": Plan.from_dict(job.plan),
        "state": services.state(job),
        "series": page_series.for_page(job.runner, series),
        "can_edit": can(request.user, job.project_id, Action.EDIT),
        "figure_tiers": figures.figure_tiers(job),
        "spot_notice": preempted.notice(job),
        "recovery": recovery.status(job),
        "interruptions": interruptions.items(job),
        # The latest run trained nothing (yet): what the run before it measured.
        "earlier_measured": None if job.last_throughput else measured(job),
    }
    context.update(detail_page.runner_parts(job, series))
    context.update(replan.page(job))
    context.update(budgets.job_page(job))
    if runners.for_job(job).accrues_per_stage:  # others accrue on an estimate's clock
        context["accrual"] = accrual.run_accrual(job, series)
    return render(request, "jobs/detail.html", context)


def approve(request: AuthenticatedRequest, plan_result_id: int) -> HttpResponse:
    result = _plan_result(request, plan_result_id)
    if not can(request.user, result.project_id, Action.EDIT):
        # A viewer who follows an approve link: say why and where to go, as a page (a
        # raised PermissionDenied logged a traceback for every one of them).
        return render(request, "jobs/approve_denied.html", {"result": result}, status=403)
    try:
        source = services.source_of(result)
    except ValidationError as exc:
        from django.contrib import messages

        messages.error(request, "; ".join(exc.messages))
        return redirect("planning:result", pk=plan_result_id)
    resources = sorted({s["resource"] for s in source.plan.get("stages", [])})
    # The plan page's "Approve and run" button posts no options: show the form first.
    bound = request.method == "POST" and "steps" in request.POST
    form = ApproveForm(request.POST if bound else None, resources=resources,
                       plan=source.plan, initial=_initial(source))
    if bound and form.is_valid():
        try:
            job = services.approve_plan(request.user, result, form.options(),
                                        max_restarts=form.restarts_asked())
        except ValidationError as exc:
            form.add_service_errors(exc.message_dict)
        else:
            return redirect("jobs:detail", pk=job.pk)
    status = 400 if bound else 200
    plan = Plan.from_dict(source.plan)
    context = {"form": form, "source": source, "plan": plan,
               "stage_layers": _stage_layers(plan, result)}
    return render(request, "jobs/approve.html", context, status=status)


def _stage_layers(plan: Plan, result: Any) -> list[tuple[Any, str]]:
    # Layer names, as the planning pages show them (indices only when the model has none).
    names = list(getattr(getattr(result, "model", None), "layer_names", list)())
    labels = []
    for stage in plan.stages:
        first, last = (names[stage.first], names[stage.last]) if stage.last < len(names) \
            else (str(stage.first), str(stage.last))
        labels.append((stage, first if first == last else f"{first} … {last}"))
    return labels


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.cancel)


@require_POST
def restart(request: HttpRequest, pk: int) -> HttpResponse:
    """Restart (from the latest run's checkpoint if it failed or was cancelled); with
    `resume_step`, the spot notice's one click: from that checkpoint or nothing."""
    step = request.POST.get("resume_step")
    if step is not None:
        return _act(request, pk, lambda user, job: services.resume(user, job, step))
    return _act(request, pk, services.restart)


@require_POST
def replan_measured(request: HttpRequest, pk: int) -> HttpResponse:
    """One click: a new planning request with the latest run's measured numbers."""
    from django.contrib import messages

    job = get_owned(request.user, Job.objects.select_related("work"), pk, Action.EDIT)
    try:
        planning = replan.replan(request.user, job)
    except ValidationError as exc:
        for problems in exc.message_dict.values():
            messages.error(request, "; ".join(problems))
        return redirect("jobs:detail", pk=pk)
    return redirect("planning:detail", pk=planning.pk)


def _act(request: HttpRequest, pk: int, act: Any) -> HttpResponse:
    from django.contrib import messages

    job = get_owned(request.user, Job.objects.select_related("work"), pk, Action.EDIT)
    try:
        act(request.user, job)
    except ValidationError as exc:
        for problems in exc.message_dict.values():
            messages.error(request, "; ".join(problems))
    return redirect("jobs:detail", pk=pk)


def _plan_result(request: HttpRequest, pk: int) -> Any:
    try:
        model = apps.get_model(*PLAN_RESULT_MODEL)
    except LookupError:
        raise Http404("Planning is not installed.") from None
    return get_owned(request.user, model.objects.select_related("project"), pk)


def _initial(source: services.PlanSource) -> dict[str, Any]:
    """Steps: about 40, rounded up to whole rounds of every stage's replicas."""
    units = [s.get("units") or 1 for s in source.plan.get("stages", [])]
    return {"steps": whole_steps(units), "batch_size": source.batch_size}
