from django.apps import AppConfig


class BackgroundConfig(AppConfig):
    name = "webapp.background"
    label = "background"
    verbose_name = "Background work"

    def ready(self) -> None:
        from webapp.background import evaluate_kind  # noqa: F401  registers its work kind
