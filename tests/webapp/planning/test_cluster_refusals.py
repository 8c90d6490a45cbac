"""Issue 25 item 7: what the present state refuses about a cluster is a 409 naming the
field (a name another cluster of the project has, a cluster that plans were made on); the
same body may succeed once that state changes. What the body breaks stays a 400."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def _post(client: Any, url: str, data: Any) -> Any:
    return client.post(url, data, content_type="application/json")


def test_a_cluster_name_already_taken_is_a_409_naming_the_name(
    personas: Any, login: Any, catalogue: list[Any]
) -> None:
    client = login(personas.member)
    body = {"project": personas.project.pk, "name": "gpus",
            "resource_types": [catalogue[0].pk]}
    assert _post(client, "/api/clusters/", body).status_code == 201
    taken = _post(client, "/api/clusters/", body)
    assert taken.status_code == 409
    assert taken.json() == {"name": ["a cluster called 'gpus' already exists"]}
    other = _post(client, "/api/clusters/", dict(body, name="cpus")).json()
    renamed = client.patch(f"/api/clusters/{other['id']}/", {"name": "gpus"},
                           content_type="application/json")
    assert renamed.status_code == 409 and "already exists" in renamed.json()["name"][0]
    # The body's own faults are still 400s naming the field.
    blank = _post(client, "/api/clusters/", dict(body, name="  "))
    assert blank.status_code == 400 and "name" in blank.json()


def test_deleting_a_cluster_that_plans_use_is_a_409_until_they_are_gone(
    personas: Any, login: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    cluster = plan_result.request.cluster
    refused = client.delete(f"/api/clusters/{cluster.pk}/")
    assert refused.status_code == 409
    assert refused.json() == {"cluster": [
        "1 plan(s) were made on c; it stays so they keep their cluster (edit it instead)"]}
    plan_result.request.delete()
    assert client.delete(f"/api/clusters/{cluster.pk}/").status_code == 204
