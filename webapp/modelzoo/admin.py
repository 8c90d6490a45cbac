from django.contrib import admin

from webapp.modelzoo.models import RegisteredModel
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(RegisteredModel)
class RegisteredModelAdmin(ProjectScopedAdmin):
    list_display = ["name", "source", "zoo_name", "size", "project", "created_at"]
    list_filter = ["source"]
    search_fields = ["name", "zoo_name"]
