"""The generic background-work record behind every long action (profile, plan, train, run)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.projects.models import ProjectOwned


class Status(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    CANCELLING = "cancelling", "Cancelling"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})


class Work(ProjectOwned):
    """`kind` names a `WorkKind` (webapp.background.kinds); `params` is its validated input
    and `result` its JSON output. `progress` is a fraction 0..1, `message` says what it is
    doing now, `error` is a sentence a person can act on."""

    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=300, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Where it waits (webapp.background.kinds.QUEUES) and how far it got, in the kind's steps.
    queue = models.CharField(max_length=40, blank=True)
    step = models.PositiveBigIntegerField(default=0)
    total_steps = models.PositiveBigIntegerField(default=0)
    # The lease (webapp.background.leases): the attempt running it (host:pid:token), which
    # refreshes `heartbeat_at`; a lease not refreshed within settings.WORK_LEASE_S is dead.
    attempt = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            models.Index(fields=["status", "heartbeat_at"], name="background_work_lease_idx"),
        ]
        verbose_name_plural = "work"

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

