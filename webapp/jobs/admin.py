from typing import Any

from django.contrib import admin

from webapp.jobs.models import Job, JobMetric
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(Job)
class JobAdmin(ProjectScopedAdmin):
    list_display = ["id", "name", "project", "model_name", "runner", "sync_mode", "steps",
                    "accrued_cost", "created_at"]
    list_filter = ["runner", "model_name"]
    readonly_fields = ["created_at"]


@admin.register(JobMetric)
class JobMetricAdmin(ProjectScopedAdmin):
    project_field = "job__project"
    list_display = ["job", "run", "step", "samples_per_s", "loss", "cost"]

    def _project_id(self, obj: Any) -> int:
        return int(obj.job.project_id)
