"""Both runners keep the sync mode under one key, `sync` (the data-parallel runner's was
`mode`), and a job stores the bound of its stages taking turns (`flushed_throughput`, the
runner's prediction on approval) instead of asking its runner from the model.

Existing jobs keep working: a data-parallel job's `mode` becomes `sync`; a pipeline job
gets its bound as its runner would give it (a `bsp` run of a multi-stage plan). Reversible.
"""

from typing import Any

from django.db import migrations, models


def bound(job: Any) -> float | None:
    """The pipeline runner's `flushed_throughput` for a stored row."""
    from heterps_core.errors import HeterPSError
    from heterps_core.plan import Plan
    from heterps_core.runtime import sync

    try:
        plan = Plan.from_dict(job.plan)
        most = sync.bound(plan, str((job.options or {}).get("sync") or ""))
    except (HeterPSError, KeyError, ValueError, TypeError):
        return None  # a plan or mode this version does not read: no bound shown
    if not most or not plan.throughput:
        return None
    return job.predicted_throughput * most / plan.throughput


def forwards(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.only("pk", "runner", "options", "plan", "predicted_throughput"):
        options = dict(job.options or {})
        if job.runner == "dataparallel" and "mode" in options:
            options["sync"] = options.pop("mode")
        flushed = bound(job) if job.runner == "pipeline" else None
        Job.objects.filter(pk=job.pk).update(options=options, flushed_throughput=flushed)


def backwards(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.filter(runner="dataparallel").only("pk", "options"):
        options = dict(job.options or {})
        if "sync" in options:
            options["mode"] = options.pop("sync")
        Job.objects.filter(pk=job.pk).update(options=options)


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0005_job_log_files"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="flushed_throughput",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, backwards),
    ]
