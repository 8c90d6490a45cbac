"""Roles grant actions; outsiders get 404 everywhere (pages, API), never 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import Http404

from webapp.catalogue.models import ResourceType
from webapp.projects.permissions import (
    Action,
    PermissionDenied,
    can,
    check,
    get_owned,
    get_project,
    role_of,
    visible,
    visible_projects,
)

pytestmark = pytest.mark.django_db


def test_each_role_grants_its_actions(personas: Any) -> None:
    p = personas.project
    table = {
        personas.owner: {Action.VIEW, Action.EDIT, Action.MANAGE},
        personas.member: {Action.VIEW, Action.EDIT},
        personas.viewer: {Action.VIEW},
        personas.outsider: set(),
    }
    for user, allowed in table.items():
        assert {a for a in Action if can(user, p, a)} == allowed, user.username


def test_outsiders_get_404_and_low_roles_get_403(personas: Any) -> None:
    with pytest.raises(Http404):
        check(personas.outsider, personas.project, Action.VIEW)
    with pytest.raises(Http404):
        get_project(personas.outsider, personas.project.pk)
    with pytest.raises(PermissionDenied, match="viewer of this project may not edit"):
        check(personas.viewer, personas.project, Action.EDIT)
    assert check(personas.member, personas.project, Action.EDIT) == "member"
    assert role_of(personas.owner, personas.project.pk) == "owner"


def test_querysets_are_scoped_to_memberships(personas: Any) -> None:
    from webapp.projects.services import create_project

    other = create_project(personas.outsider, "Other")
    mine = ResourceType.objects.create(project=personas.project, name="cpu", kind="cpu",
                                       price_per_hour=1, count=1, memory_gb=1, network_gbps=1)
    ResourceType.objects.create(project=other, name="gpu", kind="gpu",
                                price_per_hour=1, count=1, memory_gb=1, network_gbps=1)
    assert list(visible_projects(personas.viewer)) == [personas.project]
    assert list(visible(personas.viewer, ResourceType.objects.all())) == [mine]
    assert get_owned(personas.viewer, ResourceType.objects.all(), mine.pk) == mine
    with pytest.raises(Http404):
        get_owned(personas.outsider, ResourceType.objects.all(), mine.pk)


@pytest.mark.parametrize("who, status", [
    ("owner", 200), ("member", 200), ("viewer", 200), ("outsider", 404),
])
def test_project_page_and_api_follow_the_roles(
    personas: Any, login: Any, who: str, status: int
) -> None:
    client = login(getattr(personas, who))
    pk = personas.project.pk
    assert client.get(f"/projects/{pk}/").status_code == status
    assert client.get(f"/api/projects/{pk}/").status_code == status


def test_viewers_do_not_get_the_start_form_and_cannot_post_it(
    personas: Any, login: Any
) -> None:
    client = login(personas.viewer)
    page = client.get(f"/projects/{personas.project.pk}/")
    assert b"Start in the background" not in page.content
    response = client.post(f"/work/start/evaluate/{personas.project.pk}/", {"instance": "{}"})
    assert response.status_code == 403
