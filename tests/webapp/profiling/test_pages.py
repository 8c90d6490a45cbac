"""The profile run page: live card while running, results when done, 404 for outsiders."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.profiling.models import ProfileRun

pytestmark = pytest.mark.django_db


def test_starting_from_the_model_page_shows_the_live_card(personas: Any, login: Any,
                                                          zoo_model: Any) -> None:
    client = login(personas.member)
    response = client.post(f"/profiling/start/{zoo_model.pk}/", {"batch_size": 0, "repeats": 1})
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in response.content.decode()
    response = client.post(f"/profiling/start/{zoo_model.pk}/", {"batch_size": 16, "repeats": 1})
    run = ProfileRun.objects.get()
    assert response["Location"] == f"/profiling/{run.pk}/"
    page = client.get(f"/profiling/{run.pk}/").content.decode()
    assert f'data-ws="/ws/work/{run.work.pk}/"' in page and "Per-layer results" not in page
    assert login(personas.viewer).post(f"/profiling/start/{zoo_model.pk}/",
                                       {"batch_size": 16, "repeats": 1}).status_code == 403


def test_results_page_for_roles_and_404_for_outsiders(personas: Any, login: Any,
                                                      profiled: Any) -> None:
    for user in (personas.owner, personas.member, personas.viewer):
        page = login(user).get(f"/profiling/{profiled.pk}/").content.decode()
        assert "Per-layer results" in page and profiled.device in page
    assert login(personas.outsider).get(f"/profiling/{profiled.pk}/").status_code == 404
