from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"

    def ready(self) -> None:
        from webapp.jobs import run_kind  # noqa: F401  registers its work kind
        from webapp.jobs.measured import threshold

        threshold()  # a bad HETERPS_MEASURED_THRESHOLD stops the start, naming the variable
