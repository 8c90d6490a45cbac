"""A finished run's start-up recorded as a restart time of the resource types it ran on like
with like (issue 26.1: "restart time measured from the runtime's own runs").

A spot notice drains the whole job and a resume starts every process again, so replacing an
interrupted unit costs about one start-up of the job: launch to the first finished mini-batch
(`startup_s` of the run's summary, the runtime's own figure). It is kept for each type of the
plan whose stages ran on hardware like the type's (the run's measured stages that are not a
substitute), found by provenance: the type in the cluster the plan was made for, never a
type of the same name elsewhere. `ResourceType.restart()` takes the median of the latest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webapp.catalogue.models import ResourceType, RestartSample
from webapp.jobs.models import Job, MeasuredStage


def record(job: Job, run: int, summary: Mapping[str, Any]) -> list[RestartSample]:
    """One sample per resource type the run measured like with like (none without a
    start-up: a run that trained nothing, or a plan not made in this project)."""
    startup = summary.get("startup_s")
    if startup is None or startup <= 0:
        return []
    like_with_like = set(MeasuredStage.objects.filter(job=job, run=run, final=True,
                                                      substitute=False)
                         .values_list("resource", flat=True))
    samples = []
    for resource_type in planned_types(job):
        if resource_type.name in like_with_like:
            sample, _ = RestartSample.objects.update_or_create(
                resource_type=resource_type, source=f"job {job.pk} run {run}",
                defaults={"project_id": job.project_id, "startup_s": float(startup)})
            samples.append(sample)
    return samples


def planned_types(job: Job) -> list[ResourceType]:
    """The resource types of the cluster the job's plan was made for (none: a plan file)."""
    if job.plan_result_id is None:
        return []
    return list(ResourceType.objects.filter(
        project_id=job.project_id,
        clusters__plans__results__pk=job.plan_result_id).distinct())
