"""Resource types managed by plain members in pages, API and admin, with one validation:
the service's, which calls heterps_core's catalogue validator."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.catalogue import services
from webapp.catalogue.models import ResourceType

pytestmark = pytest.mark.django_db

GOOD = {"name": "t4", "kind": "gpu", "price_per_hour": 0.53, "count": 4, "memory_gb": 16,
        "network_gbps": 25}


@pytest.mark.parametrize(("field", "value", "says"), [
    ("price_per_hour", 0, "greater than 0"),
    ("price_per_hour", -1, "greater than 0"),
    ("price_per_hour", "abc", "must be a number"),
    ("price_per_hour", float("nan"), "finite"),
    ("price_per_hour", 1e9, "at most 10,000 ($ per unit-hour)"),
    ("kind", "banana", "must be one of cpu, gpu"),
    ("count", 0, "greater than 0"),
    ("count", 2.5, "whole number"),
    ("count", 10**9, "(units of one resource type)"),
    ("memory_gb", 0, "greater than 0"),
    ("network_gbps", "", "required"),
    ("name", "has space", "letters, digits"),
    ("name", "x" * 61, "letters, digits"),
])
def test_clean_names_the_field(field: str, value: Any, says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        services.clean({**GOOD, field: value})
    assert says in " ".join(caught.value.message_dict[field])


def test_member_adds_from_the_catalogue_with_own_price_and_count(personas: Any) -> None:
    made = services.create(personas.member, personas.project,
                           {"template": "gpu-t4", "price_per_hour": "0.40", "count": "3"})
    assert (made.name, made.kind, made.price_per_hour, made.count) == ("gpu-t4", "gpu", 0.4, 3)
    assert made.memory_gb == 16.0  # from the catalogue entry


def test_viewer_and_outsider_cannot_write(personas: Any) -> None:
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    with pytest.raises(PermissionDenied):
        services.create(personas.viewer, personas.project, GOOD)
    with pytest.raises((PermissionDenied, Http404)):
        services.create(personas.outsider, personas.project, GOOD)


def test_pages_as_member_viewer_outsider(personas: Any, login: Any) -> None:
    url = f"/resources/project/{personas.project.pk}/new/"
    client = login(personas.member)
    response = client.post(url, {"template": "gpu-a100", "count": "2"})
    assert response.status_code == 302
    a100 = ResourceType.objects.get(project=personas.project, name="gpu-a100")
    assert a100.count == 2 and a100.price_per_hour == 3.67
    page = client.get(f"/projects/{personas.project.pk}/").content.decode()
    assert "gpu-a100" in page and f"/resources/{a100.pk}/edit/" in page

    bad = client.post(url, {"name": "x1", "kind": "gpu", "price_per_hour": "0", "count": "1",
                            "memory_gb": "1", "network_gbps": "1"})
    assert bad.status_code == 400 and "greater than 0" in bad.content.decode()

    edit = client.post(f"/resources/{a100.pk}/edit/", {
        "name": "a100", "kind": "gpu", "price_per_hour": "3.00", "count": "4",
        "memory_gb": "40", "network_gbps": "24"})
    assert edit.status_code == 302
    a100.refresh_from_db()
    assert (a100.name, a100.price_per_hour, a100.count) == ("a100", 3.0, 4)

    assert login(personas.viewer).get(url).status_code == 403
    assert login(personas.viewer).post(f"/resources/{a100.pk}/delete/").status_code == 403
    viewer_page = login(personas.viewer).get(f"/projects/{personas.project.pk}/").content
    assert b"Add a resource type" not in viewer_page
    assert login(personas.outsider).get(url).status_code == 404
    assert login(personas.outsider).get(f"/resources/{a100.pk}/edit/").status_code == 404
    assert login(personas.outsider).post(f"/resources/{a100.pk}/delete/").status_code == 404

    assert login(personas.member).post(f"/resources/{a100.pk}/delete/").status_code == 302
    assert not ResourceType.objects.filter(pk=a100.pk).exists()


def test_delete_refused_while_a_cluster_would_be_empty(personas: Any) -> None:
    from webapp.planning.services import create_cluster, delete_cluster

    only = services.create(personas.member, personas.project, GOOD)
    cluster = create_cluster(personas.member, personas.project, "solo", [only])
    with pytest.raises(ValidationError, match="only resource type of cluster"):
        services.delete(personas.member, only)
    delete_cluster(personas.member, cluster)
    services.delete(personas.member, only)


def test_edit_and_delete_refused_while_a_job_runs_on_it(personas: Any) -> None:
    from webapp.background.models import Status, Work
    from webapp.jobs.models import Job

    used = services.create(personas.member, personas.project, GOOD)
    work = Work.objects.create(project=personas.project, kind="job-run", status=Status.RUNNING)
    Job.objects.create(project=personas.project, name="j", model_name="ctr_dnn", steps=1,
                       batch_size=1, predicted_throughput=1, predicted_cost_per_hour=1,
                       plan={"stages": [{"resource": "t4"}]}, work=work)
    with pytest.raises(ValidationError, match="running job"):
        services.update(personas.member, used, {"price_per_hour": 1.0})
    with pytest.raises(ValidationError, match="running job"):
        services.delete(personas.member, used)


def test_api_crud(personas: Any, login: Any) -> None:
    client = login(personas.member)
    created = client.post("/api/resource-types/", {"project": personas.project.pk,
                                                   "template": "cpu-c6i.8xlarge", "count": 8},
                          content_type="application/json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    bad = client.patch(f"/api/resource-types/{pk}/", {"price_per_hour": 0},
                       content_type="application/json")
    assert bad.status_code == 400 and "price_per_hour" in bad.json()
    assert client.patch(f"/api/resource-types/{pk}/", {"price_per_hour": 1.2},
                        content_type="application/json").json()["price_per_hour"] == 1.2
    assert client.post("/api/resource-types/", {"project": personas.project.pk, **GOOD,
                                                "kind": "banana"},
                       content_type="application/json").json()["kind"]
    assert client.get("/api/resource-types/?project=abc").status_code == 400
    assert client.get("/api/resource-types/catalogue/").status_code == 200
    viewer = login(personas.viewer)
    assert viewer.delete(f"/api/resource-types/{pk}/").status_code == 403
    outsider = login(personas.outsider)
    assert outsider.delete(f"/api/resource-types/{pk}/").status_code == 404
    assert outsider.post("/api/resource-types/", {"project": personas.project.pk, **GOOD},
                         content_type="application/json").status_code == 404
    assert login(personas.member).delete(f"/api/resource-types/{pk}/").status_code == 204


def test_admin_uses_the_same_validation(personas: Any) -> None:
    bad = ResourceType(project=personas.project, **{**GOOD, "kind": "banana",
                                                    "price_per_hour": 0})
    with pytest.raises(ValidationError) as caught:
        bad.full_clean()
    assert "kind" in caught.value.message_dict or "price_per_hour" in caught.value.message_dict


def test_a_bad_stored_type_is_named_when_planning(personas: Any, profiled: Any) -> None:
    """A row from before the validation (price 0) is refused by name, not as resources[i]."""
    from webapp.planning.services import create_cluster, start_planning

    good = services.create(personas.member, personas.project, {**GOOD, "name": "ok"})
    bad = ResourceType.objects.create(project=personas.project, **{**GOOD, "name": "free",
                                                                   "price_per_hour": 0})
    cluster = create_cluster(personas.member, personas.project, "mixed", [good, bad])
    with pytest.raises(ValidationError) as caught:
        start_planning(personas.member, profiled.model, cluster, 1000, ["exact"])
    problem = " ".join(caught.value.message_dict["cluster"])
    assert "resource type free: price_per_hour must be greater than 0" in problem
    assert "resources[" not in problem


def test_clusters_edit_and_delete_over_the_api(personas: Any, login: Any) -> None:
    from webapp.planning.services import create_cluster

    one = services.create(personas.member, personas.project, GOOD)
    two = services.create(personas.member, personas.project, {**GOOD, "name": "v100"})
    cluster = create_cluster(personas.member, personas.project, "c", [one])
    client = login(personas.member)
    changed = client.patch(f"/api/clusters/{cluster.pk}/", {"name": "both",
                                                             "resource_types": [one.pk, two.pk]},
                           content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "both" and len(changed.json()["resource_types"]) == 2
    assert login(personas.viewer).delete(f"/api/clusters/{cluster.pk}/").status_code == 403
    assert login(personas.outsider).patch(f"/api/clusters/{cluster.pk}/", {"name": "x"},
                                          content_type="application/json").status_code == 404
    assert login(personas.member).delete(f"/api/clusters/{cluster.pk}/").status_code == 204
