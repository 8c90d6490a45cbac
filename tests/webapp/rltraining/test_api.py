"""RL training API: members start a run on a planning request, outsiders get 404."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.planning.services import start_planning

pytestmark = pytest.mark.django_db


def test_rl_runs_over_the_api(personas: Any, login: Any, profiled: Any, cluster: Any) -> None:
    planning = start_planning(personas.member, profiled.model, cluster, 50_000, ["exact"])
    url = "/api/rl-training-runs/"
    body = {"request": planning.pk, "budget_s": 1, "max_updates": 5, "samples": 8}
    post = lambda user, data: login(user).post(url, data, content_type="application/json")  # noqa: E731
    assert post(personas.viewer, body).status_code == 403
    assert post(personas.outsider, body).status_code == 404
    assert post(personas.member, body | {"samples": 1}).json() == {
        "samples": ["must be between 2 and 1,024 (plans sampled per update)"]}
    started = post(personas.member, body)
    assert started.status_code == 201 and started.json()["curve"] == []
    assert login(personas.outsider).get(f"{url}{started.json()['id']}/").status_code == 404
    assert login(personas.viewer).get(f"{url}{started.json()['id']}/").status_code == 200
