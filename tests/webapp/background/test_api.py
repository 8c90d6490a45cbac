from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webapp.background.models import Work

pytestmark = pytest.mark.django_db
TINY = json.loads(
    (Path(__file__).resolve().parents[3] / "webapp/catalogue/demo/tiny-ctr.json").read_text()
)


def _start(client: Any, project: int, params: Any) -> Any:
    return client.post("/api/work/", {"project": project, "kind": "evaluate", "params": params},
                       content_type="application/json")


def test_members_start_work_viewers_get_403_outsiders_404(personas: Any, login: Any) -> None:
    pk = personas.project.pk
    assert _start(login(personas.viewer), pk, {"instance": TINY}).status_code == 403
    assert _start(login(personas.outsider), pk, {"instance": TINY}).status_code == 404
    response = _start(login(personas.member), pk, {"instance": TINY})
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "queued" and body["params"]["assignments"] == [
        ["cpu"] * 3, ["gpu"] * 3]


def test_bad_params_come_back_as_400_naming_the_field(personas: Any, login: Any) -> None:
    response = _start(login(personas.member), personas.project.pk,
                      {"instance": TINY | {"resources": []}})
    assert response.status_code == 400
    assert response.json() == {"instance.resources": ["must be a non-empty list"]}
    assert not Work.objects.exists()


def test_work_list_and_detail_are_scoped(personas: Any, login: Any) -> None:
    work = Work.objects.create(project=personas.project, kind="evaluate")
    assert [w["id"] for w in login(personas.viewer).get("/api/work/").json()["results"]] == [
        work.pk]
    outsider = login(personas.outsider)
    assert outsider.get("/api/work/").json()["results"] == []
    assert outsider.get(f"/api/work/{work.pk}/").status_code == 404
    assert outsider.get(f"/work/{work.pk}/").status_code == 404
    assert outsider.post(f"/api/work/{work.pk}/cancel/").status_code == 404


def test_cancel_through_the_api(personas: Any, login: Any) -> None:
    work = Work.objects.create(project=personas.project, kind="evaluate")
    assert login(personas.viewer).post(f"/api/work/{work.pk}/cancel/").status_code == 403
    response = login(personas.member).post(f"/api/work/{work.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


def test_each_listed_record_is_exactly_its_detail(personas: Any, login: Any) -> None:
    """The list builds its rows on a fast path (WorkListSerializer): every row must be what
    the detail (the generic serializer) answers, nulls, JSON and timestamps included."""
    from django.utils import timezone

    from webapp.background.models import Status

    Work.objects.create(project=personas.project, kind="evaluate", params={"instance": TINY})
    Work.objects.create(project=personas.project, kind="evaluate", status=Status.FAILED,
                        progress=0.25, message="stopped", metrics={"step": 3, "x": [1.5]},
                        result={"plans": [], "best": None}, error="Worker lost at step 3",
                        started_at=timezone.now(), finished_at=timezone.now())
    client = login(personas.viewer)
    rows = client.get(f"/api/work/?project={personas.project.pk}").json()["results"]
    assert len(rows) == 2
    for row in rows:
        assert row == client.get(f"/api/work/{row['id']}/").json()
    assert {row["result"] is None for row in rows} == {True, False}
