"""Planning pages: the planning form, the comparison of schedulers, one plan's detail with
what-if re-planning, and clusters."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from webapp.background.services import state
from webapp.modelzoo.forms import add_service_errors
from webapp.planning import results, services
from webapp.planning.forms import ClusterForm, PlanningForm, RLTrainingForm, WhatIfForm
from webapp.planning.models import Cluster, PlanningRequest, PlanResult
from webapp.projects.models import Project
from webapp.projects.permissions import Action, can, get_owned, get_project, visible_projects


def index(request: HttpRequest) -> HttpResponse:
    projects = list(visible_projects(request.user))
    if len(projects) == 1:
        return redirect("planning:project", project_pk=projects[0].pk)
    return render(request, "planning/index.html", {"projects": projects})


def project_page(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk)
    initial = {"model": request.GET.get("model")} if request.GET.get("model") else {}
    return _render_project(request, project, PlanningForm(project, initial=initial),
                           ClusterForm(project))


@require_POST
def create(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = PlanningForm(project, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            planning = services.start_planning(
                request.user, data["model"], data["cluster"], data["throughput_target"],
                data["schedulers"], batch_size=data["batch_size"], samples=data["samples"],
                budget_s=data["budget_s"], max_hourly_cost=data["max_hourly_cost"],
                max_total_cost=data["max_total_cost"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("planning:detail", pk=planning.pk)
    return _render_project(request, project, form, ClusterForm(project), status=400)


@require_POST
def create_cluster(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_project(request.user, project_pk, Action.EDIT)
    form = ClusterForm(project, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.create_cluster(request.user, project, data["name"],
                                    list(data["resource_types"]), data["description"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("planning:project", project_pk=project.pk)
    return _render_project(request, project, PlanningForm(project), form, status=400)


def edit_cluster(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_owned(request.user, Cluster.objects.select_related("project"), pk,
                        Action.EDIT)
    initial = {"name": cluster.name, "description": cluster.description,
               "resource_types": list(cluster.resource_types.all())}
    form = ClusterForm(cluster.project, request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.update_cluster(request.user, cluster, data["name"],
                                    list(data["resource_types"]), data["description"])
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved cluster {cluster.name}.")
            return redirect("planning:project", project_pk=cluster.project_id)
    return render(request, "planning/cluster_form.html",
                  {"cluster": cluster, "project": cluster.project, "form": form,
                   "plans": cluster.plans.count()},
                  status=400 if request.method == "POST" else 200)


@require_POST
def delete_cluster(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_owned(request.user, Cluster.objects.select_related("project"), pk,
                        Action.EDIT)
    try:
        services.delete_cluster(request.user, cluster)
    except ValidationError as exc:
        for problem in exc.messages:
            messages.error(request, f"{cluster.name} was not deleted: {problem}")
    else:
        messages.success(request, f"Deleted cluster {cluster.name}.")
    return redirect("planning:project", project_pk=cluster.project_id)


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    planning = get_owned(
        request.user,
        PlanningRequest.objects.select_related("project", "model", "cluster", "work"), pk)
    context = {
        "planning": planning,
        "project": planning.project,
        "work": planning.work,
        "state": state(planning.work) if planning.work else None,
        "rows": results.comparison(planning),
        "chart": results.chart_data(planning),
        "can_edit": can(request.user, planning.project_id, Action.EDIT),
        "rl_form": RLTrainingForm(),
        "rl_runs": planning.rl_runs.select_related("work")[:10],
        "resources": planning.instance["resources"],
        "figure_tiers": results.figure_tiers(planning),
    }
    chosen = planning.results.filter(chosen=True).first()
    context["heterogeneity"] = results.heterogeneity(chosen) if chosen else None
    return render(request, "planning/detail.html", context)


def result(request: HttpRequest, pk: int) -> HttpResponse:
    plan_result = get_owned(
        request.user,
        PlanResult.objects.select_related("project", "request__model", "request__cluster"), pk)
    resources = [r["name"] for r in plan_result.instance["resources"]]
    form = WhatIfForm(resources, request.POST or None)
    what_if = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                what_if = services.run_what_if(request.user, plan_result, data["resource"],
                                               data["price_per_hour"], data["count"])
            except ValidationError as exc:
                add_service_errors(form, exc)
        if not form.is_valid() or form.errors:
            status = 400
    return render(request, "planning/result.html", _result_context(
        request, plan_result, form, what_if), status=status)


def _result_context(request: HttpRequest, plan_result: PlanResult, form: WhatIfForm,
                    what_if: dict[str, Any] | None) -> dict[str, Any]:
    try:
        approve_url = reverse("jobs:approve", args=[plan_result.pk])
    except NoReverseMatch:  # the jobs app is optional to this page
        approve_url = None
    stages = results.stage_rows(plan_result)
    return {
        "result": plan_result,
        "planning": plan_result.request,
        "project": plan_result.project,
        "plan": plan_result.plan or {},
        "stages": stages,
        "has_markets": any(s["market"] for s in stages if "market" in s),
        "spot_saving": results.spot_saving(plan_result),
        "figures": results.plan_figures(plan_result),
        "heterogeneity": results.heterogeneity(plan_result),
        "band": results.throughput_band(plan_result),
        "explanation": results.explanation(plan_result),
        "resources": plan_result.instance["resources"],
        "form": form,
        "what_if": what_if,
        "approve_url": approve_url,
        "can_edit": can(request.user, plan_result.project_id, Action.EDIT),
        "chart": results.plan_chart(plan_result),
    }


def _render_project(request: HttpRequest, project: Project, form: PlanningForm,
                    cluster_form: ClusterForm, status: int = 200) -> HttpResponse:
    context = {
        "project": project,
        "form": form,
        "cluster_form": cluster_form,
        "clusters": Cluster.objects.filter(project=project).prefetch_related("resource_types"),
        "requests": PlanningRequest.objects.filter(project=project)
        .select_related("model", "cluster", "work")[:30],
        "can_edit": can(request.user, project, Action.EDIT),
    }
    return render(request, "planning/project.html", context, status=status)
