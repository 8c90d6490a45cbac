"""Issue 12 item 10: demo data is loaded once (a marker), never re-creates what a user
deleted, and is not loaded in production unless asked for."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from webapp.catalogue.models import ResourceType
from webapp.demo import DEMO_PROJECT, demo_wanted
from webapp.ops.demo import load_demo
from webapp.ops.services import ensure_admin
from webapp.projects.models import Project

pytestmark = pytest.mark.django_db


def test_rows_a_user_deleted_are_not_recreated() -> None:
    admin, _ = ensure_admin()
    assert load_demo(admin)["resource catalogue"] == 4
    project = Project.objects.get(name=DEMO_PROJECT)
    ResourceType.objects.filter(project=project, name="t4").delete()
    assert set(load_demo(admin).values()) == {0}
    assert not ResourceType.objects.filter(project=project, name="t4").exists()


def test_a_deleted_demo_project_stays_deleted() -> None:
    admin, _ = ensure_admin()
    load_demo(admin)
    Project.objects.filter(name=DEMO_PROJECT).delete()
    load_demo(admin)
    assert not Project.objects.filter(name=DEMO_PROJECT).exists()


def test_force_loads_again() -> None:
    admin, _ = ensure_admin()
    load_demo(admin)
    ResourceType.objects.filter(name="t4").delete()
    assert load_demo(admin, force=True)["resource catalogue"] == 1


@pytest.mark.parametrize(("mode", "env", "asked", "wanted"), [
    ("embedded", {}, None, True),
    ("embedded", {"HETERPS_DEMO": "0"}, None, False),
    ("production", {}, None, False),
    ("mixed", {}, None, False),
    ("production", {"HETERPS_DEMO": "1"}, None, True),
    ("production", {}, True, True),
    ("embedded", {}, False, False),
])
def test_demo_is_loaded_in_production_only_when_asked(
    mode: str, env: dict[str, str], asked: bool | None, wanted: bool
) -> None:
    assert demo_wanted(mode, env, asked) is wanted


def test_load_demo_command_says_when_it_was_loaded_before(settings: Any) -> None:
    call_command("load_demo", stdout=StringIO())
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "already loaded" in out.getvalue()
