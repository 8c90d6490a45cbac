"""Profile runs API: start one (members), read results (viewers), 404 for outsiders."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_profile_runs_over_the_api(personas: Any, login: Any, profiled: Any) -> None:
    url = "/api/profile-runs/"
    body = {"model": profiled.model.pk, "batch_size": 16, "repeats": 1}
    assert login(personas.viewer).post(url, body, content_type="application/json"
                                       ).status_code == 403
    assert login(personas.outsider).post(url, body, content_type="application/json"
                                         ).status_code == 404
    bad = login(personas.member).post(url, body | {"batch_size": 10**7},
                                      content_type="application/json")
    assert bad.status_code == 400 and "batch_size" in bad.json()
    started = login(personas.member).post(url, body, content_type="application/json")
    assert started.status_code == 201 and started.json()["work"] is not None
    got = login(personas.viewer).get(f"{url}{profiled.pk}/").json()
    assert {r["source"] for r in got["results"]} == {"measured", "estimated"}
    assert len(got["results"]) == len(profiled.model.layers) * 5
    assert login(personas.outsider).get(f"{url}{profiled.pk}/").status_code == 404
