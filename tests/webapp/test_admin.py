"""The admin has every model and loads for a superuser."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin

pytestmark = pytest.mark.django_db

OUR_APPS = {"projects", "background", "catalogue"}


def test_every_model_of_our_apps_is_registered() -> None:
    ours = [m for m in apps.get_models() if m._meta.app_label in OUR_APPS]
    assert ours
    missing = [m.__name__ for m in ours if not admin.site.is_registered(m)]
    assert missing == []


def test_admin_pages_load_for_a_superuser(admin_client: Any, personas: Any) -> None:
    assert admin_client.get("/admin/").status_code == 200
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        base = f"/admin/{meta.app_label}/{meta.model_name}/"
        # Some rows are never added by hand (API tokens: their owner makes them).
        addable = model_admin.has_add_permission(admin_client.request().wsgi_request)
        for url in (base, f"{base}add/") if addable else (base,):
            response = admin_client.get(url)
            assert response.status_code == 200, url
    url = f"/admin/projects/project/{personas.project.pk}/change/"
    assert b"Alpha" in admin_client.get(url).content


def test_staff_see_only_their_projects_in_the_admin(
    client: Any, personas: Any, django_user_model: Any
) -> None:
    from django.contrib.auth.models import Permission

    from webapp.projects.services import create_project

    create_project(personas.outsider, "Secret")
    staff = personas.viewer
    staff.is_staff = True
    staff.save()
    staff.user_permissions.add(*Permission.objects.filter(codename__in=[
        "view_project", "change_project"]))
    client.force_login(staff)
    page = client.get("/admin/projects/project/")
    assert page.status_code == 200
    assert b"Alpha" in page.content and b"Secret" not in page.content
    change = client.get(f"/admin/projects/project/{personas.project.pk}/change/")
    # A viewer may look but not change: the form is read-only (no save button).
    assert change.status_code == 200 and b'name="_save"' not in change.content


def test_only_owners_may_delete_a_project_in_the_admin(client: Any, personas: Any) -> None:
    from django.contrib.auth.models import Permission

    perms = Permission.objects.filter(codename__in=["view_project", "delete_project"])
    for user in (personas.member, personas.owner):
        user.is_staff = True
        user.save()
        user.user_permissions.add(*perms)
    url = f"/admin/projects/project/{personas.project.pk}/delete/"
    client.force_login(personas.member)
    assert client.get(url).status_code == 403
    client.force_login(personas.owner)
    assert client.get(url).status_code == 200


# Issue 12 item 11: a staff viewer must not add rows to a project through the admin.
def _staff(user: Any, *codenames: str) -> Any:
    from django.contrib.auth.models import Permission

    user.is_staff = True
    user.save()
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def _resource_type(project: Any) -> dict[str, Any]:
    return {"project": project.pk, "name": "tpu", "kind": "gpu", "price_per_hour": "1.0",
            "count": "2", "memory_gb": "16", "network_gbps": "10"}


def test_a_staff_viewer_cannot_add_rows_to_the_project(client: Any, personas: Any) -> None:
    from webapp.catalogue.models import ResourceType

    client.force_login(_staff(personas.viewer, "add_resourcetype", "view_resourcetype",
                              "change_resourcetype"))
    page = client.get("/admin/catalogue/resourcetype/add/")
    # No project they may edit: no add form at all.
    assert page.status_code == 403
    answer = client.post("/admin/catalogue/resourcetype/add/", _resource_type(personas.project))
    assert answer.status_code == 403
    assert not ResourceType.objects.filter(name="tpu").exists()


def test_staff_add_only_to_projects_they_may_edit(client: Any, personas: Any) -> None:
    from webapp.catalogue.models import ResourceType
    from webapp.projects.services import create_project

    staff = _staff(personas.viewer, "add_resourcetype", "view_resourcetype")
    own = create_project(staff, "Mine")
    client.force_login(staff)
    form = client.get("/admin/catalogue/resourcetype/add/")
    assert form.status_code == 200
    choices = {p.pk for p in form.context["adminform"].form.fields["project"].queryset}
    assert choices == {own.pk}
    refused = client.post("/admin/catalogue/resourcetype/add/", _resource_type(personas.project))
    assert refused.status_code == 200 and "project" in refused.context["adminform"].form.errors
    assert not ResourceType.objects.filter(project=personas.project, name="tpu").exists()
    added = client.post("/admin/catalogue/resourcetype/add/", _resource_type(own))
    assert added.status_code == 302
    assert ResourceType.objects.filter(project=own, name="tpu").exists()


def test_a_staff_member_may_add_to_the_project(client: Any, personas: Any) -> None:
    from webapp.catalogue.models import ResourceType

    client.force_login(_staff(personas.member, "add_resourcetype", "view_resourcetype"))
    added = client.post("/admin/catalogue/resourcetype/add/", _resource_type(personas.project))
    assert added.status_code == 302, added.content[:500]
    assert ResourceType.objects.filter(project=personas.project, name="tpu").exists()
