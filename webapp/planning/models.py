"""Clusters (pools of resource types), planning requests and one result per scheduler."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from webapp.background.models import Work
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling.models import ProfileRun
from webapp.projects.models import ProjectOwned


class Cluster(ProjectOwned):
    """A pool of the project's resource types that a plan may use."""

    name = models.CharField(max_length=80)
    description = models.TextField(blank=True)
    resource_types = models.ManyToManyField(ResourceType, related_name="clusters")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="cluster_name_per_project")
        ]

    def __str__(self) -> str:
        return self.name


class PlanningRequest(ProjectOwned):
    """`instance` is the spec JSON every scheduler solved; `provenance` says where each
    compute_s figure came from (measured or estimated, on what); `frontier` is the exact
    cheapest cost for a sweep of throughput targets."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="plans")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="plans")
    profile_run = models.ForeignKey(ProfileRun, null=True, on_delete=models.SET_NULL,
                                    related_name="plans")
    batch_size = models.PositiveIntegerField()
    throughput_target = models.FloatField(help_text="samples/s the plan must sustain")
    samples = models.FloatField(null=True, blank=True, help_text="samples to train on")
    # Issue 26.4: cost caps (null: none); the schedulers keep to them (planning.caps).
    max_hourly_cost = models.FloatField(null=True, blank=True, help_text="$ per hour at most")
    max_total_cost = models.FloatField(null=True, blank=True, help_text="$ in total at most")
    schedulers = models.JSONField(default=list)
    budget_s = models.FloatField(default=5.0, help_text="seconds per stochastic scheduler")
    seed = models.IntegerField(default=0)
    instance = models.JSONField()
    provenance = models.JSONField(default=list, blank=True)
    frontier = models.JSONField(default=list, blank=True)
    # With spot offers: the exact optimum with none (feasible, cost_per_hour, reason), the
    # yardstick of the plans' spot saving. None: no offers, or solved before markets.
    on_demand_optimum = models.JSONField(null=True, blank=True)
    work = models.OneToOneField(Work, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="planning_request")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return f"plan #{self.pk} of {self.model} on {self.cluster}"


class PlanResult(ProjectOwned):
    """One scheduler's answer. `plan` is the spec's plan JSON; `gap_to_exact` is the relative
    extra cost per hour over the exact optimum (0 = optimal, None = no feasible optimum)."""

    request = models.ForeignKey(PlanningRequest, on_delete=models.CASCADE,
                                related_name="results")
    scheduler = models.CharField(max_length=40)
    plan = models.JSONField(null=True, blank=True)
    feasible = models.BooleanField(default=False)
    cost_per_hour = models.FloatField(null=True, blank=True)
    throughput = models.FloatField(null=True, blank=True)
    solve_time_s = models.FloatField(null=True, blank=True)
    gap_to_exact = models.FloatField(null=True, blank=True)
    chosen = models.BooleanField(default=False)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["request", "id"]

    def __str__(self) -> str:
        return f"{self.scheduler} plan of request #{self.request_id}"

    # What the jobs app reads: the plan, the instance it was solved on, the model, the project.
    @property
    def instance(self) -> dict[str, Any]:
        return self.request.instance

    @property
    def model(self) -> RegisteredModel:
        return self.request.model

    @property
    def gap_percent(self) -> float | None:
        return None if self.gap_to_exact is None else 100 * self.gap_to_exact

    @property
    def cost_per_million_samples(self) -> float | None:
        if not self.feasible or not self.throughput or self.cost_per_hour is None:
            return None
        return self.cost_per_hour / (self.throughput * 3600) * 1e6
