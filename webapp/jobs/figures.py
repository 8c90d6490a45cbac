"""Where a job's figures come from: each resource type of its plan with the tier of the
figures it was planned with (heterps_core/provenance.py), read from the planning result it
was approved from. A job without one (approved from a plan file) says "not recorded"."""

from __future__ import annotations

from django.apps import apps

from heterps_core.heterogeneity import types_used
from heterps_core.plan import Plan
from heterps_core.provenance import UNKNOWN, ResourceProvenance
from webapp.jobs.models import Job

RESULT_MODEL = ("planning", "PlanResult")


def figure_tiers(job: Job) -> dict[str, ResourceProvenance]:
    """Per resource type of the job's plan (stages, then its server): its figures' record."""
    used = types_used(Plan.from_dict(job.plan or {"feasible": False}))
    planned = _planned(job)
    return {name: planned.get(name, UNKNOWN) for name in used}


def _planned(job: Job) -> dict[str, ResourceProvenance]:
    if job.plan_result_id is None:
        return {}
    try:
        model = apps.get_model(*RESULT_MODEL)
    except LookupError:  # the planning app is optional to jobs
        return {}
    result = (model.objects.select_related("request")
              .filter(pk=job.plan_result_id, project_id=job.project_id).first())
    if result is None:
        return {}
    from webapp.planning.results import figure_tiers

    return figure_tiers(result.request)
