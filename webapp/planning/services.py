"""Planning rules: clusters, planning requests (instance built from a profile run and a
cluster), solving them with each chosen scheduler, what-if re-plans. What pages show about
the results: webapp/planning/results.py."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core import schedulers
from heterps_core.costmodel import is_better
from heterps_core.costmodels.caps import NO_CAPS, CostCaps
from heterps_core.errors import HeterPSError
from heterps_core.explain import what_if
from heterps_core.frontier import frontier
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.profiler.instance_builder import build_instance
from heterps_core.profiler.result import ModelProfile
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.provenance import ResourceProvenance, Tier, stamp, summarise
from webapp.background.services import start_work
from webapp.catalogue.hardware import catalogue_for, with_markets
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.planning.caps import caps_of, checked_caps
from webapp.planning.models import Cluster, PlanningRequest, PlanResult
from webapp.profiling.remote import with_agent_figures
from webapp.profiling.services import latest_profile
from webapp.projects.models import Project
from webapp.projects.permissions import Action, AnyUser, check
from webapp.refusals import StateRefusal

KIND = "plan"
REFERENCE = "exact"  # the optimum every other scheduler's gap is measured against
DEFAULT_SCHEDULERS = ("exact", "rl", "greedy")
MAX_BUDGET_S = 120.0
# Far beyond any cluster; absurd targets (1e15) make the exact sweep take tens of seconds.
MAX_TARGET = 1e12
WHAT_IF_BUDGET_S = 2.0
# Rewrites a request's instance and figure provenance before it is stored.
Adjust = Callable[[Instance, list[dict[str, Any]]], tuple[Instance, list[dict[str, Any]]]]
PROGRESS_EVERY_S = 0.25


def available_schedulers() -> list[str]:
    return schedulers.names()


def default_schedulers() -> list[str]:
    names = available_schedulers()
    return [n for n in DEFAULT_SCHEDULERS if n in names]


# --- clusters ---------------------------------------------------------------------------


def create_cluster(
    user: AnyUser, project: Project, name: str,
    resource_types: list[ResourceType], description: str = "",
) -> Cluster:
    check(user, project, Action.EDIT)
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if Cluster.objects.filter(project=project, name=name).exists():
        raise StateRefusal({"name": f"a cluster called {name!r} already exists"})
    if not resource_types:
        raise ValidationError({"resource_types": "pick at least one resource type"})
    if any(r.project_id != project.pk for r in resource_types):
        raise ValidationError({"resource_types": "must belong to this project"})
    with transaction.atomic():
        cluster = Cluster.objects.create(project=project, name=name, description=description)
        cluster.resource_types.set(resource_types)
    return cluster


def update_cluster(
    user: AnyUser, cluster: Cluster, name: str,
    resource_types: list[ResourceType], description: str = "",
) -> Cluster:
    """Rename or re-pool a cluster; plans made on it keep the instance they were solved on."""
    check(user, cluster.project_id, Action.EDIT)
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if Cluster.objects.filter(project_id=cluster.project_id, name=name).exclude(
            pk=cluster.pk).exists():
        raise StateRefusal({"name": f"a cluster called {name!r} already exists"})
    if not resource_types:
        raise ValidationError({"resource_types": "pick at least one resource type"})
    if any(r.project_id != cluster.project_id for r in resource_types):
        raise ValidationError({"resource_types": "must belong to this project"})
    with transaction.atomic():
        cluster.name, cluster.description = name, description
        cluster.save(update_fields=["name", "description"])
        cluster.resource_types.set(resource_types)
    return cluster


def delete_cluster(user: AnyUser, cluster: Cluster) -> None:
    """Refused once plans were made on it: they (and jobs approved from them) name it. Like
    a name already taken, that is the present state's refusal (a 409), not the input's."""
    check(user, cluster.project_id, Action.EDIT)
    plans = cluster.plans.count()
    if plans:
        raise StateRefusal({"cluster": f"{plans} plan(s) were made on {cluster.name}; "
                                         "it stays so they keep their cluster (edit it "
                                         "instead)"})
    cluster.delete()


# --- planning requests ------------------------------------------------------------------


def build_request_instance(
    model: RegisteredModel, cluster: Cluster, batch_size: int, target: float,
    samples: float | None,
) -> tuple[Instance, list[dict[str, Any]], int | None]:
    """The spec instance for `model` on `cluster` from the model's latest profile at
    `batch_size`, with the provenance of each compute_s figure and the profile run's id.
    A chain imported with its own timings plans from those, without a profile."""
    if model.timed:
        from webapp.modelzoo.services import timed_instance

        instance, given = timed_instance(model, list(cluster.resource_types.all()), batch_size,
                                         target, samples)
        return instance, given, None
    run = latest_profile(model, batch_size)
    if run is None:
        if latest_profile(model) is None:
            raise StateRefusal({"model": f"{model.name} has no profile yet; profile it first"})
        sizes = sorted(set(model.profiles.filter(profile__isnull=False)
                           .values_list("batch_size", flat=True)))
        raise StateRefusal({"batch_size": f"no profile of {model.name} at batch size "
                                             f"{batch_size}; profiled at "
                                             f"{', '.join(map(str, sizes))}"})
    resource_types = list(cluster.resource_types.all())
    if not resource_types:
        raise ValidationError({"cluster": f"{cluster.name} has no resource types"})
    _check_stored_types(resource_types)
    try:
        profile = ModelProfile.from_dict(cast(dict[str, Any], run.profile))
        built = build_instance(profile, catalogue_for(resource_types),
                               throughput_target=target, samples=samples,
                               name=f"{model.name} on {cluster.name}")
        # A type an agent measured on its own machine plans from that, not the roofline.
        built = with_agent_figures(run.pk, built)
    except HeterPSError as exc:
        raise ValidationError({"throughput_target": str(exc)}) from exc
    provenance = [f.to_dict() for f in built.figures]
    for figure in provenance:
        figure.pop("detail", None)  # the roofline working is in the profile run
    return with_markets(built.instance, resource_types), provenance, run.pk


def _why_estimated(records: dict[str, ResourceProvenance],
                   run_id: int | None) -> dict[str, ResourceProvenance]:
    """An estimated type's record with the profile run's reason no agent measured it."""
    from webapp.profiling.models import Origin, ResourceProfile
    from webapp.profiling.remote import roofline_note

    prefix = roofline_note("")
    notes = {o.resource: o.note.removeprefix(prefix) for o in ResourceProfile.objects.filter(
        run_id=run_id, origin=Origin.ESTIMATED).exclude(note="")} if run_id else {}
    return {name: replace(r, device=f"{r.device}; {notes[name]}")
            if r.tier == Tier.ESTIMATED and notes.get(name) else r
            for name, r in records.items()}


def _check_stored_types(resource_types: list[ResourceType]) -> None:
    """Rows stored before the catalogue's validation (or by hand) are named, with the field,
    instead of failing later as `resources[2].price_per_hour`."""
    from webapp.catalogue.services import FIELDS, clean

    for resource_type in resource_types:
        try:
            clean({f: getattr(resource_type, f) for f in FIELDS})
        except ValidationError as exc:
            problems = "; ".join(f"{field} {' '.join(msgs)}"
                                 for field, msgs in exc.message_dict.items())
            raise ValidationError({"cluster": (
                f"resource type {resource_type.name}: {problems}; edit it on the project "
                "page")}) from exc


def start_planning(
    user: AnyUser, model: RegisteredModel, cluster: Cluster,
    throughput_target: float, scheduler_names: list[str], batch_size: int | None = None,
    samples: float | None = None, budget_s: float = 5.0, seed: int = 0,
    adjust: Adjust | None = None, max_hourly_cost: float | None = None,
    max_total_cost: float | None = None,
) -> PlanningRequest:
    """Validate, build the instance, record the request and enqueue the solving work.
    `adjust` rewrites the built instance and its provenance before it is stored (re-planning
    with a run's measured numbers: `webapp.jobs.replan`)."""
    check(user, model.project_id, Action.EDIT)
    if cluster.project_id != model.project_id:
        raise ValidationError({"cluster": "must belong to the model's project"})
    if not (isinstance(throughput_target, int | float) and math.isfinite(throughput_target)
            and 0 < throughput_target <= MAX_TARGET):
        raise ValidationError({"throughput_target": f"must be a number of samples/s greater "
                                                    f"than 0 and at most {MAX_TARGET:g}"})
    if samples is not None and not (math.isfinite(samples) and samples > 0):
        raise ValidationError({"samples": "must be greater than 0 (or empty)"})
    if not 0 < budget_s <= MAX_BUDGET_S:
        raise ValidationError({"budget_s": f"must be between 0 and {MAX_BUDGET_S:g} CPU "
                                                "seconds"})
    caps = checked_caps(max_hourly_cost, max_total_cost, samples)
    names = list(dict.fromkeys(scheduler_names))
    if not names:
        raise ValidationError({"schedulers": "pick at least one scheduler"})
    unknown = sorted(set(names) - set(available_schedulers()))
    if unknown:
        raise ValidationError({"schedulers": f"unknown: {', '.join(unknown)}; known: "
                                             f"{', '.join(available_schedulers())}"})
    batch_size = batch_size or _profiled_batch_size(model)
    instance, provenance, run_id = build_request_instance(
        model, cluster, batch_size, float(throughput_target), samples)
    if adjust is not None:
        instance, provenance = adjust(instance, provenance)
    # Each type's tier, from its figures as finally stored (an agent's, a run's corrections).
    instance = stamp(instance, _why_estimated(summarise(provenance), run_id))
    with transaction.atomic():
        request = PlanningRequest.objects.create(
            project_id=model.project_id, model=model, cluster=cluster, profile_run_id=run_id,
            batch_size=batch_size, throughput_target=float(throughput_target), samples=samples,
            schedulers=names, budget_s=budget_s, seed=seed, instance=instance.to_dict(),
            max_hourly_cost=caps.max_hourly_cost, max_total_cost=caps.max_total_cost,
            provenance=provenance, created_by=user if user.is_authenticated else None,
        )
        request.work = start_work(user, model.project, KIND, {"request": request.pk})
        request.save(update_fields=["work"])
    return request


def solve_request(request_id: int, progress: ProgressCallback = no_progress) -> dict[str, Any]:
    """Run every chosen scheduler on the request's instance and store one result each,
    then the gaps to the exact optimum, the chosen plan and the frontier. Idempotent: a
    rerun updates the results in place (same ids)."""
    request = PlanningRequest.objects.get(pk=request_id)
    instance = Instance.from_dict(request.instance)
    names = request.schedulers
    caps = caps_of(request)
    steps = len(names) + 1
    plans: dict[str, Plan | None] = {}
    errors: dict[str, str] = {}
    for i, name in enumerate(names):
        report = _scaled(progress, i, steps, name)
        report(Progress(0, 1, "starting"))
        try:
            plans[name] = _solve(name, instance, request.seed, request.budget_s, report, caps)
        except HeterPSError as exc:
            plans[name], errors[name] = None, str(exc)
    reference = plans.get(REFERENCE) or _solve(REFERENCE, instance, 0, None, no_progress, caps)
    request.on_demand_optimum = _on_demand_optimum(instance, caps)
    request.save(update_fields=["on_demand_optimum"])
    progress(Progress(len(names), steps, "sweeping targets for the exact frontier"))
    # The sweep reports progress too: a Cancel (WorkCancelled from the callback) stops it
    # between targets instead of after the whole sweep.
    sweep = _scaled(progress, len(names), steps, "exact frontier")
    points = [p.to_dict() for p in frontier(instance, progress=sweep)]
    _store_results(request, plans, errors, reference, points)
    progress(Progress(steps, steps, "done"))
    best = PlanResult.objects.filter(request=request, chosen=True).first()
    return {"request": request.pk, "chosen": best.scheduler if best else None,
            "feasible": sum(1 for p in plans.values() if p is not None and p.feasible)}


def _solve(name: str, instance: Instance, seed: int, budget_s: float | None,
           progress: ProgressCallback, caps: CostCaps = NO_CAPS) -> Plan:
    scheduler_class = schedulers.get(name)
    refusal = scheduler_class.refusal(instance)
    if refusal is not None:
        raise HeterPSError(f"{name} refused: {refusal}")
    return schedulers.create(name, seed=seed, budget_s=budget_s, caps=caps).plan(instance,
                                                                                 progress)


def chosen_scheduler(plans: dict[str, Plan | None]) -> str | None:
    """The scheduler whose plan is chosen: the best by the objective (`is_better`); on a
    tie, the exact scheduler's (a proven optimum), never the first one listed (`bayes`
    came before `exact` on the form and won ties, issue 25.11)."""
    best_name: str | None = None
    for name, plan in plans.items():
        incumbent = plans[best_name] if best_name else None
        if plan is None:
            continue
        tie = (incumbent is not None and plan.feasible and not is_better(plan, incumbent)
               and not is_better(incumbent, plan))
        if is_better(plan, incumbent) or (tie and name == REFERENCE):
            best_name = name
    return best_name


def _on_demand_optimum(instance: Instance, caps: CostCaps) -> dict[str, Any] | None:
    """The exact plan with every spot offer removed (None when the cluster has none)."""
    if not instance.has_markets:
        return None
    plan = _solve(REFERENCE, instance.on_demand(), 0, None, no_progress, caps)
    return {"feasible": plan.feasible,
            "cost_per_hour": plan.cost_per_hour if plan.feasible else None,
            "reason": plan.reason}


def _store_results(request: PlanningRequest, plans: dict[str, Plan | None],
                   errors: dict[str, str], reference: Plan, points: list[dict[str, Any]]) -> None:
    best_name = chosen_scheduler(plans)
    optimum = reference.cost_per_hour if reference.feasible else None
    # In place: a re-solve rewrites each scheduler's row and keeps its id, so jobs made
    # from a result and links to it keep working; rows of other origins stay as they are.
    fields = ["plan", "feasible", "cost_per_hour", "throughput", "solve_time_s",
              "gap_to_exact", "chosen", "error"]
    with transaction.atomic():
        existing = {r.scheduler: r for r in
                    request.results.select_for_update().filter(scheduler__in=list(plans))}
        request.results.filter(chosen=True).update(chosen=False)
        for name, plan in plans.items():
            fresh = _result(request, name, plan, errors.get(name, ""), optimum,
                            name == best_name)
            row = existing.get(name)
            if row is None:
                fresh.save()
                continue
            for field in fields:
                setattr(row, field, getattr(fresh, field))
            row.save(update_fields=fields)
        request.frontier = points
        request.save(update_fields=["frontier"])


def _result(request: PlanningRequest, name: str, plan: Plan | None, error: str,
            optimum: float | None, chosen: bool) -> PlanResult:
    if plan is None:
        return PlanResult(project_id=request.project_id, request=request, scheduler=name,
                          error=error)
    gap = None
    if plan.feasible and optimum and plan.cost_per_hour is not None:
        gap = max(0.0, plan.cost_per_hour / optimum - 1.0)
    return PlanResult(
        project_id=request.project_id, request=request, scheduler=name, plan=plan.to_dict(),
        feasible=plan.feasible, cost_per_hour=plan.cost_per_hour, throughput=plan.throughput,
        solve_time_s=plan.solve_time_s, gap_to_exact=gap, chosen=chosen and plan.feasible,
    )


def _scaled(progress: ProgressCallback, step: int, steps: int, name: str) -> ProgressCallback:
    """Map a scheduler's own progress into this request's overall progress, at most every
    PROGRESS_EVERY_S (a scheduler may report thousands of steps)."""
    last = [0.0]

    def report(p: Progress) -> None:
        now = time.monotonic()
        if p.current and now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        scale = 1000
        current = step * scale + int(p.fraction * scale)
        progress(Progress(current, steps * scale, f"{name}: {p.message}".strip(": "),
                          {"scheduler": name, **_json_numbers(p.metrics)}))

    return report


def _profiled_batch_size(model: RegisteredModel) -> int:
    run = latest_profile(model) if not model.timed else None
    return run.batch_size if run is not None else model.default_batch_size


def _json_numbers(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items()
            if isinstance(v, int | float | str) and not (isinstance(v, float)
                                                          and not math.isfinite(v))}


def what_if_summary(change: Any) -> str:
    """The what-if's answer with its units: "$0.840/h, \u2212$0.360 per hour (\u221230.0%)" (the
    core's summary printed the difference as a bare "-0.360")."""
    before, after = change.before, change.after
    if not after.feasible or not before.feasible:
        return str(change.summary())
    delta = change.delta_cost_per_hour or 0.0
    pct = 100 * delta / before.cost_per_hour if before.cost_per_hour else 0.0
    moved = "" if after.assignment == before.assignment else " (plan changes)"
    return (f"{change.change}: ${after.cost_per_hour:,.3f}/h, {_signed_dollars(delta)} per hour "
            f"({pct:+.1f}%){moved}").replace("(-", "(\u2212")


def _signed_dollars(amount: float) -> str:
    """The sign before the dollar sign, as the pages' `signed_usd` filter writes it (the
    planning app sits below costs, so it keeps its own three-decimal copy)."""
    text = f"${abs(amount):,.3f}"
    if float(text[1:].replace(",", "")) == 0:
        return f"\u00b1{text}"
    return f"+{text}" if amount > 0 else f"\u2212{text}"


def run_what_if(
    user: AnyUser, result: PlanResult, resource: str,
    price_per_hour: float | None, count: int | None,
) -> dict[str, Any]:
    """Re-plan exactly with one resource's price or count changed; nothing is stored."""
    check(user, result.project_id, Action.VIEW)
    instance = Instance.from_dict(result.instance)
    if resource not in instance.resource_names:
        # The stored plan's cluster decides, not the body: the state's refusal (a 409).
        raise StateRefusal({"resource": f"no resource {resource!r} in this plan's cluster"})
    if price_per_hour is None and count is None:
        raise ValidationError({"price_per_hour": "give a new price or a new count"})
    if price_per_hour is not None and not (math.isfinite(price_per_hour) and price_per_hour > 0):
        raise ValidationError({"price_per_hour": "must be greater than 0 dollars per unit-hour"})
    if count is not None and count < 1:
        raise ValidationError({"count": "must be at least 1 unit"})
    before = Plan.from_dict(result.plan) if result.plan else None
    try:
        change = what_if(instance, resource, price_per_hour=price_per_hour, count=count,
                         before=before if before is not None and before.feasible else None)
    except HeterPSError as exc:
        raise ValidationError({"resource": str(exc)}) from exc
    data = change.to_dict()
    data["summary"] = what_if_summary(change)
    data["after_stages"] = [
        {"resource": s.resource, "units": s.units,
         "layers": [instance.layers[j].name for j in s.layers]} for s in change.after.stages
    ]
    return data
