from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from webapp.catalogue.models import ResourceType, RestartSample
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(ResourceType)
class ResourceTypeAdmin(ProjectScopedAdmin):
    list_display = ["name", "kind", "project", "price_per_hour", "spot_price",
                    "interruptions_per_hour", "count", "memory_gb"]
    list_filter = ["kind"]


@admin.register(RestartSample)
class RestartSampleAdmin(ProjectScopedAdmin):
    """Runs write these (webapp/jobs/restart_samples.py); staff may delete an outlier."""

    list_display = ["resource_type", "source", "startup_s", "recorded_at", "project"]
    readonly_fields = ["resource_type", "source", "startup_s", "project"]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False
