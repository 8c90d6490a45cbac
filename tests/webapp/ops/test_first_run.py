"""First-run set-up: one admin with a random password, idempotent demo data."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from webapp.catalogue.models import ResourceType
from webapp.demo import DEMO_PROJECT
from webapp.ops.demo import load_demo
from webapp.ops.services import ensure_admin
from webapp.projects.models import Project
from webapp.projects.permissions import role_of

pytestmark = pytest.mark.django_db


def test_the_admin_is_created_once_with_a_random_password() -> None:
    admin, password = ensure_admin()
    assert password is not None and len(password) >= 16
    assert authenticate(username="admin", password=password) == admin
    again, second = ensure_admin()
    assert (again, second) == (admin, None)
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_passwords_differ_between_installations(django_user_model: Any) -> None:
    _, first = ensure_admin()
    django_user_model.objects.all().delete()
    _, second = ensure_admin()
    assert first != second


def test_demo_data_loads_once_into_the_demo_project() -> None:
    admin, _ = ensure_admin()
    first = load_demo(admin)
    assert first["resource catalogue"] == 4
    again = load_demo(admin)
    assert set(again) == set(first) and set(again.values()) == {0}
    project = Project.objects.get(name=DEMO_PROJECT)
    assert role_of(admin, project) == "owner"
    kinds = set(ResourceType.objects.filter(project=project).values_list("kind", flat=True))
    assert kinds == {"cpu", "gpu"}


def test_load_demo_command_prints_the_password_only_the_first_time() -> None:
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "password" in out.getvalue()
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "password" not in out.getvalue() and "resource catalogue: 0 new" in out.getvalue()


def test_demo_resources_are_valid_core_resources() -> None:
    from heterps_core.instance import Instance

    admin, _ = ensure_admin()
    load_demo(admin)
    resources = [r.to_core().to_dict() for r in ResourceType.objects.all()]
    layer = {"name": "fc", "kind": "dense", "compute_s": {r["name"]: 0.01 for r in resources},
             "output_mb": 0.0, "sync_mb": 0.0, "memory_gb": 1.0, "shardable": False}
    instance = Instance.from_dict({"version": 1, "batch_size": 1, "throughput_target": 1,
                                   "resources": resources, "layers": [layer]})
    assert len(instance.resources) == ResourceType.objects.count() >= 4
