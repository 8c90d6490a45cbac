"""Re-plan with measured numbers (issue 16, the closed loop): a run's measured stage times
put into the planning instance its plan was solved on, the what-if against the plan that
ran, and a new planning request built from them.

What a measurement may correct, like with like: a stage's time measured on binding target
X on machine M corrects the figures of every resource type *of this job's plan* bound to X
whose figures were measured on M and X's device (not a substitute there, by provenance:
`measured.substitute`). A type whose figures are estimated (a GPU type, or `c6i` made from
the catalogue's `cpu-c6i.8xlarge`) bound to this CPU says nothing about that hardware: its
figures stay the estimate. Names never decide.

How: the stage's layers keep their relative figures on that type; their compute seconds
are scaled so that the cost model's time per mini-batch of one unit (compute + boundary
traffic + synchronisation, at the units that ran) equals the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError

from heterps_core.costmodel import ChainCosts, evaluate
from heterps_core.errors import HeterPSError
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.runtime.throughput import device_of
from webapp.jobs import measured, runners
from webapp.jobs.figures import figure_tiers
from webapp.jobs.models import Job, MeasuredStage, Replan
from webapp.projects.permissions import Action, AnyUser, check

REQUEST_MODEL = ("planning", "PlanningRequest")
RESULT_MODEL = ("planning", "PlanResult")
WHAT_IF_BUDGET_S = 2.0  # the exact re-plan on the job page (the planning what-if's budget)


@dataclass(frozen=True)
class Correction:
    """One layer group's measured time on one resource type, against the instance's."""

    entry: MeasuredStage
    resource: str  # the resource type whose figures it corrects
    layers: tuple[int, ...]
    measured_s: float  # one unit's time per mini-batch, at the instance's batch size
    predicted_s: float  # the cost model's for the same layers, type and units
    factor: float  # applied to the layers' compute seconds on `resource`

    @property
    def difference(self) -> float:
        return self.measured_s / self.predicted_s - 1

    def to_dict(self, names: list[str]) -> dict[str, Any]:
        first, last = names[self.layers[0]], names[self.layers[-1]]
        how = ("its own hardware" if self.resource == self.entry.resource else
               f"stage {self.entry.stage}'s {self.entry.resource} ran on {self.entry.bound_to}")
        return {
            "stage": self.entry.stage, "resource": self.resource,
            "layers": first if first == last else f"{first} … {last}",
            "measured_ms": 1000 * self.measured_s, "predicted_ms": 1000 * self.predicted_s,
            "difference_pct": 100 * self.difference, "factor": self.factor,
            "provenance": f"{self.entry.provenance} ({how})",
        }


def corrections(job: Job, instance: Instance,
                entries: list[MeasuredStage]) -> list[Correction]:
    """What the run's measured stages say about the instance's figures (see the module)."""
    plan_types = {s.get("resource") for s in (job.plan or {}).get("stages") or []}
    binding = job.binding
    records = figure_tiers(job)  # the figures the plan that ran was made with
    costs = ChainCosts(instance)
    found = []
    for entry in entries:
        if not entry.measured_time_per_batch_s or not entry.layers:
            continue
        first, last = entry.layers[0], entry.layers[-1]
        if last >= len(instance.layers):
            continue
        # Per mini-batch of the instance's size (compute grows about linearly with it).
        seconds = entry.measured_time_per_batch_s * instance.batch_size / entry.batch_size
        for name in sorted(plan_types & set(instance.resource_names)):
            if binding.get(name, "cpu") != entry.bound_to or measured.substitute(
                    records, name, entry.bound_to, entry.host):
                continue
            if not costs.runs_on(first, last, name):
                continue
            shape = costs.shape(first, last, name)
            predicted = shape.time_per_batch(entry.units)
            compute = sum(instance.layers[i].compute_s[name] for i in range(first, last + 1))
            other = predicted - compute
            factor = ((seconds - other) / compute if compute > 0 and seconds > other
                      else seconds / predicted)
            found.append(Correction(entry, name, tuple(range(first, last + 1)), seconds,
                                    predicted, factor))
    return found


def measured_instance(instance: Instance, found: list[Correction]) -> Instance:
    """The instance with each correction's compute seconds scaled."""
    layers = list(instance.layers)
    for c in found:
        for i in c.layers:
            compute = dict(layers[i].compute_s)
            compute[c.resource] = compute[c.resource] * c.factor
            layers[i] = replace(layers[i], compute_s=compute)
    return instance.replace(layers=tuple(layers))


def measured_provenance(provenance: list[dict[str, Any]], instance: Instance,
                        found: list[Correction]) -> list[dict[str, Any]]:
    """The request's figure provenance with the corrected figures (of the adjusted
    `instance`) labelled as measured."""
    labels = {(instance.layers[i].name, c.resource): (c, i) for c in found for i in c.layers}
    out = []
    for figure in provenance:
        hit = labels.get((str(figure.get("layer")), str(figure.get("resource"))))
        if hit is None:
            out.append(figure)
            continue
        c, i = hit
        out.append({**figure, "seconds": instance.layers[i].compute_s[c.resource],
                    "source": "measured", "tier": "measured-run", "host": c.entry.host,
                    # Its device class first: what the next run is compared by.
                    "device": f"{device_of(c.entry.bound_to)} ({c.entry.provenance}: the "
                              f"{c.entry.resource} stage on {c.entry.bound_to}, scaled "
                              f"x{c.factor:.3g} from {figure.get('source', 'the estimate')})",
                    "job": c.entry.job_id, "run": c.entry.run})
    return out


@dataclass(frozen=True)
class Offer:
    """The job page's "re-plan with measured numbers", or why there is none."""

    available: bool
    reason: str = ""
    what_if: dict[str, Any] | None = None


def offer(job: Job) -> Offer:
    """The what-if of the job's latest run's measured numbers against its plan: the plan as
    estimated, the same stages re-provisioned with the measured numbers, and the exact plan
    on them; offered when a correction differs by more than the threshold."""
    request = _request(job)
    if request is None:
        return Offer(False, "this job's plan was not made by a planning request here, so "
                            "there is no instance to re-plan with measured numbers")
    entries = measured.for_run(job)
    if not entries:
        return Offer(False, "no stage time measured yet in this run")
    instance = Instance.from_dict(request.instance)
    found = corrections(job, instance, entries)
    if not found:
        return Offer(False, "every stage ran on a substitute (no resource type of the plan "
                            "has figures measured on the machine and device it ran on): "
                            "nothing measured applies to the plan's figures")
    limit = measured.threshold()
    if all(abs(c.difference) <= limit for c in found):
        return Offer(False, f"measured within {100 * limit:.0f}% of the prediction on the "
                            "same hardware", _what_if(job, instance, found, plan_again=False))
    return Offer(True, "", _what_if(job, instance, found))


def _what_if(job: Job, instance: Instance, found: list[Correction],
             plan_again: bool = True) -> dict[str, Any]:
    from heterps_core.schedulers.exact import exact_plan

    names = [layer.name for layer in instance.layers]
    adjusted = measured_instance(instance, found)
    current = Plan.from_dict(job.plan)
    data: dict[str, Any] = {
        "run": job.runs, "final": all(c.entry.final for c in found),
        "corrections": [c.to_dict(names) for c in found],
        "current": _figures(current), "target": instance.throughput_target,
    }
    if current.assignment:
        data["current_measured"] = _figures(evaluate(adjusted, current.assignment, "measured"))
    if plan_again:
        try:
            best = exact_plan(adjusted, budget_s=WHAT_IF_BUDGET_S)
        except HeterPSError as exc:
            data["replanned"] = {"feasible": False, "reason": str(exc)}
        else:
            data["replanned"] = _figures(best)
            data["same_plan"] = tuple(best.assignment or ()) == tuple(current.assignment or ())
            data["difference"] = _difference(data["current"], data["replanned"])
            if "current_measured" in data:
                data["difference_measured"] = _difference(data["current_measured"],
                                                          data["replanned"])
    return data


def _figures(plan: Plan) -> dict[str, Any]:
    return {
        "feasible": plan.feasible, "reason": plan.reason or "",
        "cost_per_hour": plan.cost_per_hour, "throughput": plan.throughput,
        "stages": [{"resource": s.resource, "units": s.units, "layers": list(s.layers)}
                   for s in plan.stages],
        "layout": " → ".join(f"{s.units or '?'} x {s.resource}" for s in plan.stages),
    }


def _difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    if not (before.get("feasible") and after.get("feasible")):
        return None
    cost = after["cost_per_hour"] - before["cost_per_hour"]
    rate = after["throughput"] - before["throughput"]
    return {"cost_per_hour": cost, "throughput": rate,
            "cost_pct": 100 * cost / before["cost_per_hour"] if before["cost_per_hour"] else None,
            "throughput_pct": 100 * rate / before["throughput"] if before["throughput"] else None}


def replan(user: AnyUser, job: Job) -> Any:
    """A new planning request of the job's model on its cluster, with the latest run's
    measured numbers in place of the figures they correct (members and owners only)."""
    from webapp.planning import services as planning

    check(user, job.project_id, Action.EDIT)
    current = offer(job)
    if not current.available:
        raise ValidationError({"replan": current.reason})
    request = _request(job)
    assert request is not None  # the offer needs it
    entries = measured.for_run(job)

    def adjust(instance: Instance, provenance: list[dict[str, Any]]
               ) -> tuple[Instance, list[dict[str, Any]]]:
        found = corrections(job, instance, entries)
        adjusted = measured_instance(instance, found)
        return adjusted, measured_provenance(provenance, adjusted, found)

    new = planning.start_planning(
        user, request.model, request.cluster, request.throughput_target,
        list(request.schedulers), batch_size=request.batch_size, samples=request.samples,
        budget_s=request.budget_s, seed=request.seed, adjust=adjust,
        max_hourly_cost=request.max_hourly_cost, max_total_cost=request.max_total_cost)
    Replan.objects.create(project_id=job.project_id, job=job, run=job.runs, request_id=new.pk,
                          what_if=current.what_if or {},
                          created_by=user if user.is_authenticated else None)
    return new


def replans(job: Job) -> list[dict[str, Any]]:
    """The job's re-plans with measured numbers, each with its chosen plan (once solved)
    against the plan that ran."""
    try:
        result_model = apps.get_model(*RESULT_MODEL)
    except LookupError:
        return []
    current = _figures(Plan.from_dict(job.plan))
    out = []
    for r in Replan.objects.filter(job=job)[:5]:
        chosen = result_model.objects.filter(request_id=r.request_id, chosen=True).first()
        figures = _figures(Plan.from_dict(chosen.plan)) if chosen and chosen.plan else None
        out.append({"replan": r, "request_id": r.request_id, "chosen": figures,
                    "scheduler": chosen.scheduler if chosen else None,
                    "difference": _difference(current, figures) if figures else None,
                    "current": current})
    return out


def page(job: Job) -> dict[str, Any]:
    """The job page's closed-loop part: the offer (or why none) and earlier re-plans. Only
    for runners whose runs measure the plan's stages (`can_replan`)."""
    if not job.plan_result_id or not runners.for_job(job).can_replan:
        return {}
    return {"replan_offer": offer(job), "replans": replans(job),
            "replan_threshold_pct": 100 * measured.threshold()}


def _request(job: Job) -> Any:
    """The planning request the job's plan came from (None: a sample or CLI plan)."""
    request = job.planning_request()
    return request if request is not None and request.instance else None
