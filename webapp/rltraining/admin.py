from django.contrib import admin

from webapp.projects.admin import ProjectScopedAdmin
from webapp.rltraining.models import RLTrainingRun


@admin.register(RLTrainingRun)
class RLTrainingRunAdmin(ProjectScopedAdmin):
    list_display = ["id", "request", "project", "budget_s", "max_updates", "created_at"]
    raw_id_fields = ["work", "request"]
    exclude = ["curve"]
