"""One validated `options` JSON per job, under the core's names, instead of five columns.

Existing jobs keep their settings: a pipeline job's sync mode, binding and micro-batches
become {"sync", "binding", "micro_batches"}; a data-parallel job's mode, parameters and
settings become {"mode", "params", "workers", "slowdowns", "backend"}. Reversible.
"""

from typing import Any

from django.db import migrations, models

DP_SETTINGS = ("workers", "slowdowns", "backend")


def options_of(job: Any) -> dict[str, Any]:
    if job.runner == "dataparallel":
        settings = job.dataparallel or {}
        return {"mode": job.sync_mode, "params": dict(job.sync_params or {}),
                **{k: settings[k] for k in DP_SETTINGS if k in settings}}
    return {"sync": job.sync_mode, "binding": dict(job.binding or {}),
            "micro_batches": job.micro_batches}


def forwards(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.all().iterator():
        job.options = options_of(job)
        job.save(update_fields=["options"])


def backwards(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.all().iterator():
        options = job.options or {}
        if job.runner == "dataparallel":
            job.sync_mode = options.get("mode", "bsp")
            job.sync_params = options.get("params", {})
            job.dataparallel = {k: options[k] for k in DP_SETTINGS if k in options}
        else:
            job.sync_mode = options.get("sync", "bsp")
            job.binding = options.get("binding", {})
            job.micro_batches = options.get("micro_batches", 1)
        job.save(update_fields=["sync_mode", "sync_params", "dataparallel", "binding",
                                "micro_batches"])


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0002_runner_dataparallel"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="options",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="job", name="binding"),
        migrations.RemoveField(model_name="job", name="sync_mode"),
        migrations.RemoveField(model_name="job", name="sync_params"),
        migrations.RemoveField(model_name="job", name="dataparallel"),
        migrations.RemoveField(model_name="job", name="micro_batches"),
        migrations.AlterField(
            model_name="job",
            name="runner",
            field=models.CharField(default="pipeline", max_length=20),
        ),
    ]
