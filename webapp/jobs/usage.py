"""The catalogue's question "which running jobs use this resource type?", answered by the
jobs app (registered in `JobsConfig.ready`: the catalogue sits below jobs)."""

from __future__ import annotations

from webapp.catalogue.models import ResourceType
from webapp.jobs.models import ACTIVE, Job


def running_jobs_using(resource_type: ResourceType) -> list[int]:
    jobs = Job.objects.filter(project_id=resource_type.project_id,
                              work__status__in=ACTIVE).only("pk", "plan")
    return [j.pk for j in jobs if any(s.get("resource") == resource_type.name
                                      for s in (j.plan or {}).get("stages", []))]
