"""Jobs: approved plans being executed by the runtime, with their metric time series."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import models

from webapp.background.models import Status, Work
from webapp.jobs import runlog
from webapp.jobs.options import DATAPARALLEL, PIPELINE
from webapp.projects.models import ProjectOwned

ACTIVE = (Status.QUEUED, Status.RUNNING, Status.CANCELLING)


class Runner:
    """The built-in runners' names; the registry (`webapp.jobs.runners`) lists them all."""

    PIPELINE = PIPELINE
    DATAPARALLEL = DATAPARALLEL


class Job(ProjectOwned):
    """An approved plan with how to run it. `work` is the current (latest) run; a restart
    makes a new run. Predictions come from the plan, `accrued_cost` and `last_*` from the
    runtime's latest sample (kept here so lists and the dashboard need no extra query)."""

    name = models.CharField(max_length=200)
    plan = models.JSONField()
    model_name = models.CharField(max_length=60)
    model_size = models.CharField(max_length=20, default="tiny")
    scheduler = models.CharField(max_length=40, blank=True)
    plan_result_id = models.BigIntegerField(null=True, blank=True)  # planning's result row
    # How it runs: a runner of `webapp.jobs.runners` (the registry sits above this module and
    # is never imported here), and that runner's validated options under the core's names
    # (pipeline: sync, binding, micro_batches; data-parallel: sync, params, workers,
    # slowdowns, backend; the sync mode is `sync` for every runner).
    runner = models.CharField(max_length=20, default=Runner.PIPELINE)
    options = models.JSONField(default=dict, blank=True)
    steps = models.PositiveIntegerField()
    batch_size = models.PositiveIntegerField()
    lr = models.FloatField(default=0.05)
    seed = models.IntegerField(default=0)
    predicted_throughput = models.FloatField()  # samples/s
    predicted_cost_per_hour = models.FloatField()  # dollars per hour, estimate
    # The estimate with the stages taking turns, when the runner's sync mode drains every
    # mini-batch (a pipeline `bsp` run of a multi-stage plan): what such a run can reach.
    # Its runner's (`JobRunner.flushed_throughput`), set on approval.
    flushed_throughput = models.FloatField(null=True, blank=True)  # samples/s
    work = models.ForeignKey(Work, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    runs = models.PositiveIntegerField(default=0)
    accrued_cost = models.FloatField(default=0.0)  # dollars, total accrued over all runs
    last_throughput = models.FloatField(null=True, blank=True)
    last_loss = models.FloatField(null=True, blank=True)
    last_step = models.PositiveIntegerField(default=0)
    summary = models.JSONField(null=True, blank=True)
    # Dollars over all runs; the runner drains the job to a checkpoint before it passes.
    budget = models.FloatField(null=True, blank=True)
    # Managed recovery: a run stopped by a spot notice is resumed by itself, at most
    # `max_restarts` times over the job's life; `restarts` counts those automatic resumes.
    max_restarts = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return f"job #{self.pk} {self.name}"

    @property
    def status(self) -> str:
        return self.work.status if self.work else "approved"  # approved, never started

    @property
    def log(self) -> str:
        """Every run's log lines, oldest first (one file per run: `runlog`)."""
        return runlog.text(self)

    # Read-only views of `options`, in the words the pages and the API use.

    @property
    def sync_mode(self) -> str:
        """The sync mode, of the runner's own registry (the runtime's, or data-parallel's)."""
        return str(self.options.get("sync") or "")

    @property
    def sync_params(self) -> dict[str, Any]:
        return dict(self.options.get("params") or {})

    @property
    def binding(self) -> dict[str, str]:
        return dict(self.options.get("binding") or {})

    @property
    def micro_batches(self) -> int:
        return int(self.options.get("micro_batches") or 1)

    @property
    def dataparallel(self) -> dict[str, Any]:
        """Data-parallel settings (workers, slowdowns, backend); {} for other runners."""
        return {k: self.options[k] for k in ("workers", "slowdowns", "backend")
                if k in self.options}

    @property
    def active(self) -> bool:
        return self.work is not None and self.work.status in ACTIVE

    def planning_request(self) -> Any:
        """The planning request the job's plan came from, with its model and cluster (None:
        a sample or CLI plan, or planning not installed). Looked up by name: the planning
        app depends on this one, not the other way round."""
        if not self.plan_result_id:
            return None
        try:
            result_model = apps.get_model("planning", "PlanResult")
        except LookupError:
            return None
        result = result_model.objects.select_related(
            "request__model", "request__cluster").filter(
            pk=self.plan_result_id, project_id=self.project_id).first()
        return result.request if result is not None else None


class JobMetric(models.Model):
    """One runtime sample: the window's throughput and loss, the accrued cost so far."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="metrics")
    run = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    total_steps = models.PositiveIntegerField()
    elapsed_s = models.FloatField()
    samples_per_s = models.FloatField()
    loss = models.FloatField(null=True, blank=True)
    cost = models.FloatField()  # dollars accrued in this run so far
    # The run's measured throughput so far (one definition, runtime/throughput.py) where the
    # runner reports it; the run's last row gets the final figure when it finishes, so a
    # later run that trains nothing does not hide what an earlier one measured.
    run_samples_per_s = models.FloatField(null=True, blank=True)
    # Pipeline: one entry per stage. Data-parallel: one per worker (step time, phase, ...).
    stages = models.JSONField(default=list, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "run", "elapsed_s"]
        indexes = [models.Index(fields=["job", "run", "elapsed_s"])]


class MeasuredStage(ProjectOwned):
    """A measured profile entry: one stage (layer group) of one run, as it ran (issue 16).
    Kept apart from the job's summary so a restart, which clears the summary, keeps what
    earlier runs measured; written live from each sample (`final` False) and once more from
    the run's summary (`final` True). `webapp.jobs.measured` reads and writes them."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="measured")
    run = models.PositiveIntegerField()
    stage = models.PositiveIntegerField()  # 1-based
    model_name = models.CharField(max_length=200)  # the runtime model (zoo name or factory)
    model_size = models.CharField(max_length=20)
    layers = models.JSONField(default=list)  # the plan's layer indices of this stage
    resource = models.CharField(max_length=120)  # the plan's resource type
    bound_to = models.CharField(max_length=60)  # where it ran (binding target)
    # The machine it ran on (heterps_core.provenance.this_host()); "": not known (rows
    # stored before it was recorded, or replicas on several machines).
    host = models.CharField(max_length=200, blank=True, default="")
    # Its time is of other hardware than its type's figures (runtime.throughput.is_substitute).
    substitute = models.BooleanField(default=False)
    units = models.PositiveIntegerField(default=1)
    batch_size = models.PositiveIntegerField()
    measured_time_per_batch_s = models.FloatField(null=True, blank=True)  # one unit's
    predicted_time_per_batch_s = models.FloatField(null=True, blank=True)  # the plan's
    busy_share = models.FloatField(null=True, blank=True)
    step = models.PositiveIntegerField(default=0)  # mini-batches finished when measured
    final = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-job_id", "-run", "stage"]
        constraints = [models.UniqueConstraint(fields=["job", "run", "stage"],
                                               name="measured_stage_per_run")]
        indexes = [models.Index(fields=["project", "model_name", "model_size"])]

    @property
    def provenance(self) -> str:
        return f"measured in job {self.job_id}, run {self.run}" + (
            "" if self.final else f" (live, at step {self.step})")


class Replan(ProjectOwned):
    """A planning request made from a run's measured profile, and the what-if shown when it
    was asked for (so the job page can set the new plan against the one that ran)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="replans")
    run = models.PositiveIntegerField()
    request_id = models.BigIntegerField()  # planning's PlanningRequest row
    what_if = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
