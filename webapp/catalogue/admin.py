from django.contrib import admin

from webapp.catalogue.models import ResourceType
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(ResourceType)
class ResourceTypeAdmin(ProjectScopedAdmin):
    list_display = ["name", "kind", "project", "price_per_hour", "spot_price",
                    "interruptions_per_hour", "count", "memory_gb"]
    list_filter = ["kind"]
