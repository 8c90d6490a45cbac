"""Project rules: creating projects and managing who may do what in them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from webapp.projects.models import Membership, Project, Role
from webapp.projects.permissions import Action, AnyUser, check

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@transaction.atomic
def create_project(owner: User, name: str, description: str = "") -> Project:
    """A new project whose creator is its first owner."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if owned_name_taken(owner, name):
        raise ValidationError({"name": f"you already own a project called {name!r}; "
                                       "pickers could not tell them apart"})
    project = Project.objects.create(name=name, description=description.strip())
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


def owned_name_taken(owner: User, name: str) -> bool:
    """Project names are unique (ignoring case) among the projects one user owns."""
    return Project.objects.filter(memberships__user=owner, memberships__role=Role.OWNER,
                                  name__iexact=name.strip()).exists()


@transaction.atomic
def set_member(actor: AnyUser, project: Project, user: User, role: str) -> Membership:
    """Give `user` the role (adding them if needed); only owners may."""
    check(actor, project, Action.MANAGE)
    if role not in Role.values:
        raise ValidationError({"role": f"must be one of {', '.join(Role.values)}"})
    membership, _ = Membership.objects.select_for_update().get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    if membership.role != role:
        if membership.role == Role.OWNER:
            _keep_an_owner(project, leaving=membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(actor: AnyUser, project: Project, user: User) -> None:
    check(actor, project, Action.MANAGE)
    membership = Membership.objects.filter(project=project, user=user).first()
    if membership is None:
        return
    if membership.role == Role.OWNER:
        _keep_an_owner(project, leaving=membership)
    membership.delete()


def _keep_an_owner(project: Project, leaving: Membership) -> None:
    # A project without an owner could never get new members again.
    others = Membership.objects.filter(project=project, role=Role.OWNER).exclude(pk=leaving.pk)
    if not others.exists():
        raise ValidationError({"role": "a project needs at least one owner"})
