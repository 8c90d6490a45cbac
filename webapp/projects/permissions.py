"""The one permission helper that views, the API, websocket consumers and the admin use.

Roles grant actions: a viewer may `view`, a member may also `edit`, an owner may also
`manage` (members, deletion). Someone with no role in a project must not learn that it
exists, so every lookup for an outsider raises `Http404`, never 403.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser, User
from django.core import exceptions
from django.db.models import Model, QuerySet
from django.http import Http404

# MAX_ID and valid_id are re-exported: callers ask permissions about ids they were given.
from webapp.bounds import MAX_ID, valid_id  # noqa: F401
from webapp.projects.models import Membership, Project, Role

AnyUser = User | AnonymousUser
M = TypeVar("M", bound=Model)


class Action(Enum):
    VIEW = "view"
    EDIT = "edit"
    MANAGE = "manage"


ROLE_ACTIONS: dict[str, frozenset[Action]] = {
    Role.VIEWER: frozenset({Action.VIEW}),
    Role.MEMBER: frozenset({Action.VIEW, Action.EDIT}),
    Role.OWNER: frozenset({Action.VIEW, Action.EDIT, Action.MANAGE}),
}


class PermissionDenied(exceptions.PermissionDenied):
    """The user sees the project but their role does not allow the action: Django and DRF
    both answer it with 403."""

    def __init__(self, action: Action, role: str) -> None:
        super().__init__(f"a {role} of this project may not {action.value} it")
        self.action = action
        self.role = role


def role_of(user: AnyUser, project: Project | int) -> str | None:
    if not user.is_authenticated:
        return None
    project_id = project if isinstance(project, int) else project.pk
    return (
        Membership.objects.filter(project_id=project_id, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )


def can(user: AnyUser, project: Project | int, action: Action) -> bool:
    role = role_of(user, project)
    return role is not None and action in ROLE_ACTIONS[role]


def visible_projects(user: AnyUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user_id=user.pk).distinct()


def projects_for(user: AnyUser, action: Action) -> QuerySet[Project]:
    """Projects where the user's role allows `action` (admin form choices, pickers)."""
    if not user.is_authenticated:
        return Project.objects.none()
    roles = [role for role, actions in ROLE_ACTIONS.items() if action in actions]
    return Project.objects.filter(memberships__user_id=user.pk,
                                  memberships__role__in=roles).distinct()


def visible(user: AnyUser, queryset: QuerySet[M], project_field: str = "project") -> QuerySet[M]:
    """Rows of `queryset` that belong to a project the user has any role in."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(**{f"{project_field}__memberships__user_id": user.pk})


def check(user: AnyUser, project: Project | int, action: Action) -> str:
    """The user's role if it allows `action`; Http404 for outsiders, PermissionDenied else."""
    role = role_of(user, project)
    if role is None:
        raise Http404("No such project.")
    if action not in ROLE_ACTIONS[role]:
        raise PermissionDenied(action, role)
    return role


def get_project(user: AnyUser, pk: Any, action: Action = Action.VIEW) -> Project:
    project = visible_projects(user).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project.")
    check(user, project, action)
    return project


def get_owned(
    user: AnyUser, queryset: QuerySet[M], pk: Any, action: Action = Action.VIEW
) -> M:
    """One project-owned row by primary key, with the same 404/403 rules as projects."""
    obj = visible(user, queryset).filter(pk=pk).first()
    if obj is None:
        raise Http404("No such object.")
    check(user, obj.project_id, action)  # type: ignore[attr-defined]
    return obj


# Primary keys are 64-bit on every backend; a larger number names nothing (and would make
# the database driver raise instead of answering "no such row").
def check_references(
    project: Project | int, params: Any, references: dict[str, type[Model]]
) -> None:
    """Every id named in `params` under a key of `references` must be a row of that model in
    `project`. A foreign id and a missing one get the same ValidationError, so a caller
    learns nothing about other projects; the role needed is the one already checked on
    `project`, since the rows belong to it."""
    if not isinstance(params, dict):
        return
    project_id = project if isinstance(project, int) else project.pk
    for field, model in references.items():
        if field not in params:
            continue
        pk = valid_id(params[field])
        found = pk is not None and model._default_manager.filter(
            pk=pk, project_id=project_id).exists()
        if not found:
            noun = model._meta.verbose_name
            raise exceptions.ValidationError({field: f"must name a {noun} of this project"})
