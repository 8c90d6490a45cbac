from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "webapp.planning"
    label = "planning"
    verbose_name = "Planning"
