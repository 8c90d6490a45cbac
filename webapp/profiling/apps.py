from django.apps import AppConfig


class ProfilingConfig(AppConfig):
    name = "webapp.profiling"
    label = "profiling"
    verbose_name = "Profiling"
