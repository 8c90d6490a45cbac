from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from webapp.projects.models import Membership, Role
from webapp.projects.permissions import PermissionDenied, role_of
from webapp.projects.services import create_project, remove_member, set_member

pytestmark = pytest.mark.django_db


def test_the_creator_owns_a_new_project(django_user_model: Any) -> None:
    ada = django_user_model.objects.create_user("ada")
    project = create_project(ada, "  Ranking  ", "CTR models")
    assert project.name == "Ranking"
    assert role_of(ada, project) == Role.OWNER


def test_a_project_needs_a_name(django_user_model: Any) -> None:
    with pytest.raises(ValidationError) as err:
        create_project(django_user_model.objects.create_user("ada"), "   ")
    assert err.value.message_dict == {"name": ["must not be empty"]}


def test_only_owners_manage_members(personas: Any) -> None:
    set_member(personas.owner, personas.project, personas.outsider, Role.VIEWER)
    assert role_of(personas.outsider, personas.project) == Role.VIEWER
    with pytest.raises(PermissionDenied):
        set_member(personas.member, personas.project, personas.viewer, Role.OWNER)
    with pytest.raises(Http404):
        remove_member(personas.outsider.__class__.objects.create_user("eve"),
                      personas.project, personas.member)
    remove_member(personas.owner, personas.project, personas.member)
    assert role_of(personas.member, personas.project) is None


def test_the_last_owner_cannot_leave_or_be_demoted(personas: Any) -> None:
    with pytest.raises(ValidationError, match="at least one owner"):
        set_member(personas.owner, personas.project, personas.owner, Role.MEMBER)
    with pytest.raises(ValidationError, match="at least one owner"):
        remove_member(personas.owner, personas.project, personas.owner)
    set_member(personas.owner, personas.project, personas.member, Role.OWNER)
    remove_member(personas.owner, personas.project, personas.owner)
    assert list(Membership.objects.filter(project=personas.project, role=Role.OWNER)
                .values_list("user__username", flat=True)) == ["member"]


def test_an_unknown_role_is_named(personas: Any) -> None:
    with pytest.raises(ValidationError) as err:
        set_member(personas.owner, personas.project, personas.outsider, "admin")
    assert "role" in err.value.message_dict
