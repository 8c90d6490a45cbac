from typing import Any

from django.contrib import admin

from webapp.profiling.models import LayerResult, ProfileRun, ResourceProfile
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(ProfileRun)
class ProfileRunAdmin(ProjectScopedAdmin):
    list_display = ["id", "model", "project", "batch_size", "device", "measured_at"]
    raw_id_fields = ["work", "model"]
    exclude = ["profile"]


@admin.register(LayerResult)
class LayerResultAdmin(ProjectScopedAdmin):
    project_field = "run__project"
    list_display = ["run", "index", "layer", "kind", "resource", "seconds", "source", "device"]
    list_filter = ["source", "kind"]
    raw_id_fields = ["run"]

    def _project_id(self, obj: Any) -> int:
        return int(obj.run.project_id)


@admin.register(ResourceProfile)
class ResourceProfileAdmin(ProjectScopedAdmin):
    project_field = "run__project"
    list_display = ["run", "resource", "origin", "host", "device", "measured_at", "note"]
    list_filter = ["origin"]
    raw_id_fields = ["run", "resource_type"]
    exclude = ["profile"]

    def _project_id(self, obj: Any) -> int:
        return int(obj.run.project_id)
