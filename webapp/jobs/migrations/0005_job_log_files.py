"""The job log moves from a text column to one file per run (`webapp.jobs.runlog`).

Forward: a job's old log text goes to the start of its latest run's log file (run 1 for a
job never started), so old rows keep their history readable on the job page; then the
column goes. Backward: the column comes back holding every run's file, oldest run first.
"""

from typing import Any

from django.db import migrations

from webapp.jobs import runlog


def to_files(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.exclude(log="").only("pk", "created_at", "runs", "log"):
        target = runlog.path(job, runlog.current_run(job))
        target.parent.mkdir(parents=True, exist_ok=True)
        later = target.read_text(encoding="utf-8") if target.exists() else ""
        target.write_text(job.log + later, encoding="utf-8")


def to_column(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.only("pk", "created_at", "runs"):
        text = runlog.text(job)
        if text:
            Job.objects.filter(pk=job.pk).update(log=text[-200_000:])


class Migration(migrations.Migration):
    dependencies = [("jobs", "0004_measured_profiles")]

    operations = [
        migrations.RunPython(to_files, to_column),
        migrations.RemoveField(model_name="job", name="log"),
    ]
