"""A profile run of a registered model and its per-layer results (measured or estimated)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.background.models import Work
from webapp.modelzoo.models import RegisteredModel
from webapp.projects.models import ProjectOwned


class ProfileRun(ProjectOwned):
    """`profile` is heterps_core's `ModelProfile` as JSON, empty until the work succeeds."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="profiles")
    work = models.OneToOneField(Work, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="profile_run")
    batch_size = models.PositiveIntegerField()
    repeats = models.PositiveIntegerField(default=3)
    device = models.CharField(max_length=120, blank=True, help_text="what it was measured on")
    measured_at = models.DateTimeField(null=True, blank=True)
    profile = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"profile #{self.pk} of {self.model} (batch {self.batch_size})"

    @property
    def done(self) -> bool:
        return self.profile is not None


class Source(models.TextChoices):
    MEASURED = "measured", "Measured"
    ESTIMATED = "estimated", "Estimated"


class LayerResult(models.Model):
    """fwd+bwd seconds per batch of one layer on one resource, and where the figure came from."""

    run = models.ForeignKey(ProfileRun, on_delete=models.CASCADE, related_name="results")
    index = models.PositiveIntegerField()
    layer = models.CharField(max_length=120)
    kind = models.CharField(max_length=20)
    resource = models.CharField(max_length=120, help_text="resource type, or the profiling device")
    seconds = models.FloatField()
    source = models.CharField(max_length=10, choices=Source.choices)
    device = models.CharField(max_length=120, help_text="measured on / estimated for")
    memory_gb = models.FloatField(default=0.0)

    class Meta:
        ordering = ["run", "index", "resource"]
        indexes = [models.Index(fields=["run", "index"])]

    def __str__(self) -> str:
        return f"{self.layer} on {self.resource}: {self.seconds:.6f} s ({self.source})"


class Origin(models.TextChoices):
    WAITING = "waiting", "Waiting for its agent"
    MEASURED = "measured", "Measured by its agent"
    ESTIMATED = "estimated", "Estimated (roofline)"


class ResourceProfile(models.Model):
    """Where one project resource type's figures of a profile run come from: measured by an
    agent on a machine of that type (host, device, when), or estimated, with why.

    One row per resource type of the run's project, written when the run's local measurement
    is recorded; an agent's answer fills in `profile` (heterps_core's `ModelProfile` as
    measured there). Runs recorded before agents existed have none: all roofline."""

    run = models.ForeignKey(ProfileRun, on_delete=models.CASCADE, related_name="origins")
    resource_type = models.ForeignKey("catalogue.ResourceType", null=True,
                                      on_delete=models.SET_NULL, related_name="+")
    resource = models.CharField(max_length=120, help_text="the resource type's name")
    origin = models.CharField(max_length=10, choices=Origin.choices)
    queue = models.CharField(max_length=200, blank=True, help_text="agent queue asked")
    task_id = models.CharField(max_length=64, blank=True)
    host = models.CharField(max_length=200, blank=True, help_text="the agent's worker")
    device = models.CharField(max_length=120, blank=True, help_text="what it measured on")
    measured_at = models.DateTimeField(null=True, blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True, help_text="why these figures are what they are")
    profile = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "resource"],
                                               name="one_origin_per_run_resource")]

    def __str__(self) -> str:
        return f"{self.resource} of {self.run}: {self.origin}"
