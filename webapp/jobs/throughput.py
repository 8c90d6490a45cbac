"""A job's measured throughput as pages and reports show it: the latest run's figure, or,
when the latest run trained nothing (a failed start, a restart still starting), the
figure of the latest earlier run that did, said to be that run's (issue 25.9).

The figure is always the one definition (`heterps_core.runtime.throughput`): live from the
samples' `run_samples_per_s`, final from the run's summary (kept on its last sample row).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from webapp.jobs.models import Job, JobMetric


@dataclass(frozen=True)
class Measured:
    per_s: float  # samples/s
    run: int  # the run that measured it

    def of_an_earlier_run(self, job: Job) -> bool:
        return self.run != job.runs


def measured(job: Job) -> Measured | None:
    """The job's measured throughput and the run it is of (None: no run trained)."""
    return measured_many([job]).get(job.pk)


def measured_many(jobs: Iterable[Job]) -> dict[int, Measured]:
    """Job id -> its measured figure, for many jobs: no query when every latest run measured
    one, else one query (a correlated subquery per job, on the job, run, elapsed index)."""
    found: dict[int, Measured] = {}
    missing: list[int] = []
    for job in jobs:
        if job.last_throughput:  # 0.0: a window in which nothing finished
            found[job.pk] = Measured(job.last_throughput, job.runs)
        else:
            missing.append(job.pk)
    if not missing:
        return found
    latest = (JobMetric.objects.filter(job_id=OuterRef("pk"), run__lte=OuterRef("runs"),
                                       run_samples_per_s__gt=0)
              .order_by("-run", "-elapsed_s"))
    rows = (Job.objects.filter(pk__in=missing)
            .annotate(per_s=Subquery(latest.values("run_samples_per_s")[:1]),
                      of_run=Subquery(latest.values("run")[:1]))
            .values_list("pk", "per_s", "of_run"))
    for job_id, per_s, run in rows:
        if per_s is not None and run is not None:
            found[job_id] = Measured(per_s, run)
    return found
