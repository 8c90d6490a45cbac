"""List endpoints answer in a fixed number of queries, not one (or more) per row."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.projects.models import Membership, Role
from webapp.projects.services import create_project

pytestmark = pytest.mark.django_db


def test_the_project_list_costs_the_same_for_50_rows_as_for_one(
    personas: Any, login: Any, django_assert_max_num_queries: Any
) -> None:
    client = login(personas.member)
    for i in range(49):
        project = create_project(personas.owner, f"Project {i:02d}")
        Membership.objects.create(project=project, user=personas.member, role=Role.VIEWER)
    with django_assert_max_num_queries(8):  # session, user, count, page, memberships
        response = client.get("/api/projects/")
    assert response.status_code == 200
    rows = response.json()["results"]
    assert len(rows) == 50
    roles = {row["name"]: row["my_role"] for row in rows}
    assert roles["Alpha"] == Role.MEMBER and roles["Project 07"] == Role.VIEWER
    assert {m["username"] for m in rows[0]["memberships"]} >= {"owner", "member"}


def test_each_listed_project_is_exactly_its_detail(personas: Any, login: Any) -> None:
    """The list builds its rows on a fast path (ProjectListSerializer): every row must be
    what the detail (the generic serializer) answers, members in the same order."""
    client = login(personas.viewer)
    other = create_project(personas.member, "Beta", "second")
    Membership.objects.create(project=other, user=personas.viewer, role=Role.VIEWER)
    Membership.objects.create(project=other, user=personas.owner, role=Role.MEMBER)
    create_project(personas.outsider, "Hidden")
    rows = client.get("/api/projects/").json()["results"]
    assert [row["name"] for row in rows] == ["Alpha", "Beta"]
    for row in rows:
        assert row == client.get(f"/api/projects/{row['id']}/").json()
    assert [m["role"] for m in rows[1]["memberships"]] == sorted(
        m["role"] for m in rows[1]["memberships"])
