from django.contrib import admin

from webapp.background.models import Work
from webapp.projects.admin import ProjectScopedAdmin


@admin.register(Work)
class WorkAdmin(ProjectScopedAdmin):
    list_display = ["id", "kind", "project", "status", "progress", "created_by", "created_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["created_at", "started_at", "finished_at"]
