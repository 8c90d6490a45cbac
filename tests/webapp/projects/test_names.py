"""Issue 17 item 7: project names are unique among one owner's projects; the migration
renames duplicates made before."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError

from webapp.projects.models import Membership, Project, Role
from webapp.projects.services import create_project

pytestmark = pytest.mark.django_db


def test_an_owner_cannot_make_two_projects_of_one_name(personas: Any, login: Any) -> None:
    with pytest.raises(ValidationError, match="already own a project called"):
        create_project(personas.owner, " alpha ")
    create_project(personas.member, "Alpha")  # another owner's own "Alpha" is fine
    page = login(personas.owner).post("/projects/new/", {"name": "ALPHA"})
    assert page.status_code == 200 and "already own a project" in page.content.decode()


def test_migration_renames_existing_duplicates(personas: Any) -> None:
    for _ in range(2):  # made before the rule, straight in the database
        extra = Project.objects.create(name="Alpha")
        Membership.objects.create(project=extra, user=personas.owner, role=Role.OWNER)
    other = Project.objects.create(name="Alpha")
    Membership.objects.create(project=other, user=personas.outsider, role=Role.OWNER)
    migration = importlib.import_module(
        "webapp.projects.migrations.0002_rename_duplicate_project_names")
    migration.rename_duplicates(apps, None)
    owned = Project.objects.filter(memberships__user=personas.owner,
                                   memberships__role=Role.OWNER).order_by("id")
    assert [p.name for p in owned] == ["Alpha", "Alpha (2)", "Alpha (3)"]
    other.refresh_from_db()
    assert other.name == "Alpha"  # nobody else owns an "Alpha" beside it
