from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_list_shows_only_my_projects_with_my_role(personas: Any, login: Any) -> None:
    from webapp.projects.services import create_project

    create_project(personas.outsider, "Hidden")
    body = login(personas.viewer).get("/api/projects/").json()
    assert [(p["name"], p["my_role"]) for p in body["results"]] == [("Alpha", "viewer")]


def test_creating_a_project_through_the_api_makes_me_owner(personas: Any, login: Any) -> None:
    client = login(personas.outsider)
    response = client.post("/api/projects/", {"name": "Mine"}, content_type="application/json")
    assert response.status_code == 201
    assert response.json()["my_role"] == "owner"
    bad = client.post("/api/projects/", {"name": ""}, content_type="application/json")
    assert bad.status_code == 400 and "name" in bad.json()


def test_project_page_creation_form(personas: Any, login: Any) -> None:
    client = login(personas.outsider)
    response = client.post("/projects/new/", {"name": "Web", "description": ""})
    assert response.status_code == 302
    assert client.get(response["Location"]).status_code == 200
