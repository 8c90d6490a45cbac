from django.contrib import admin

from webapp.planning.models import Cluster, PlanningRequest, PlanResult
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(Cluster)
class ClusterAdmin(ProjectScopedAdmin):
    list_display = ["name", "project", "created_at"]
    filter_horizontal = ["resource_types"]


@admin.register(PlanningRequest)
class PlanningRequestAdmin(ProjectScopedAdmin):
    list_display = ["id", "model", "cluster", "project", "throughput_target", "created_at"]
    raw_id_fields = ["work", "model", "cluster", "profile_run"]


@admin.register(PlanResult)
class PlanResultAdmin(ProjectScopedAdmin):
    list_display = ["id", "request", "scheduler", "feasible", "cost_per_hour", "throughput",
                    "solve_time_s", "gap_to_exact", "chosen"]
    list_filter = ["scheduler", "feasible", "chosen"]
    raw_id_fields = ["request"]
