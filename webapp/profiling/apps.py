from django.apps import AppConfig


class ProfilingConfig(AppConfig):
    name = "webapp.profiling"
    label = "profiling"
    verbose_name = "Profiling"

    def ready(self) -> None:
        from webapp.profiling import profile_kind  # noqa: F401  registers its work kind
