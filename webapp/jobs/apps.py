from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"

    def ready(self) -> None:
        from webapp.catalogue import usage
        from webapp.jobs import run_kind  # noqa: F401  registers its work kind
        from webapp.jobs.measured import threshold
        from webapp.jobs.usage import running_jobs_using

        usage.register(running_jobs_using)

        threshold()  # a bad HETERPS_MEASURED_THRESHOLD stops the start, naming the variable
