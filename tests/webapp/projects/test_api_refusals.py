"""Issue 25 item 7, found by the schema fuzz at 20 examples: a project name the caller
already owns is the present state's refusal (409 naming `name`), and a membership's PATCH
states in the schema what the view requires (`role`), refusing a body without it with a
400 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.projects.models import Membership, Project

pytestmark = pytest.mark.django_db


def _schema(client: Any) -> dict[str, Any]:
    return client.get("/api/schema/?format=json").json()


def test_a_project_name_already_owned_is_a_409_naming_the_name(
    personas: Any, login: Any
) -> None:
    client = login(personas.owner)
    taken = client.post("/api/projects/", {"name": personas.project.name.upper()},
                        content_type="application/json")
    assert taken.status_code == 409
    assert "already own a project called" in taken.json()["name"][0]
    assert Project.objects.filter(name__iexact=personas.project.name).count() == 1
    blank = client.post("/api/projects/", {"name": "  "}, content_type="application/json")
    assert blank.status_code == 400 and "name" in blank.json()
    # Another owner's project of that name is no conflict.
    other = login(personas.outsider).post("/api/projects/", {"name": personas.project.name},
                                          content_type="application/json")
    assert other.status_code == 201


def test_a_membership_patch_requires_the_role_in_schema_and_server(
    personas: Any, login: Any
) -> None:
    client = login(personas.owner)
    body = _schema(client)["paths"]["/api/memberships/{id}/"]["patch"]["requestBody"]
    assert body["required"] is True
    ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert _schema(client)["components"]["schemas"][ref]["required"] == ["role"]
    member = Membership.objects.get(user=personas.member, project=personas.project)
    for empty in ({}, {"rol": "viewer"}):
        refused = client.patch(f"/api/memberships/{member.pk}/", empty,
                               content_type="application/json")
        assert refused.status_code == 400
        assert refused.json() == {"role": ["This field is required."]}
    member.refresh_from_db()
    assert member.role == "member"
