from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"

    def ready(self) -> None:
        from webapp.background import sweeper
        from webapp.catalogue import usage
        from webapp.jobs import recovery, run_kind  # noqa: F401  run_kind registers its kind
        from webapp.jobs.measured import threshold
        from webapp.jobs.usage import running_jobs_using

        usage.register(running_jobs_using)
        sweeper.also(recovery.sweep)  # managed recovery: spot-stopped runs resume by themselves

        threshold()  # a bad HETERPS_MEASURED_THRESHOLD stops the start, naming the variable
