"""A project groups everything users create; a membership gives one user one role in it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class Project(models.Model):
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    # Dollars over all the project's jobs; every runner drains its job before it passes.
    budget = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")
        ]
        ordering = ["project", "role", "user"]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"


class ProjectOwned(models.Model):
    """Abstract base for every model that belongs to a project (the permission helper's unit)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")

    class Meta:
        abstract = True


class Invitation(models.Model):
    """An owner's invitation to join a project with a role. The link's token is stored only
    as its SHA-256 (like API tokens): a database dump cannot be used to join. It works once
    (`accepted_at`), until `expires_at`, unless an owner revoked it (`revoked_at`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(blank=True)
    # Set when the owner named an existing account: only that account may accept.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.invitee} invited to {self.project} as {self.role}"

    @property
    def invitee(self) -> str:
        return self.user.get_username() if self.user_id and self.user else self.email

    @property
    def pending(self) -> bool:
        return (self.accepted_at is None and self.revoked_at is None
                and self.expires_at > timezone.now())
