from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "webapp.planning"
    label = "planning"
    verbose_name = "Planning"

    def ready(self) -> None:
        from webapp.planning import plan_kind  # noqa: F401  registers its work kind
