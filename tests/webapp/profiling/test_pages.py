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


def _known_profile(held: float) -> Any:
    """The tiny CTR-DNN timed until each median is known, as if other processes had held
    `held` of the cores meanwhile (the share is the figure the label is judged by)."""
    from dataclasses import replace

    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from heterps_core.profiler.measure import CpuUse, Precision, repeat_until_known

    with repeat_until_known(Precision(target=0.5, max_repeats=20)):
        profile = profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=6),
                                    size="tiny", batch_size=16)
    use = CpuUse(1.0 - held, 1.0, 1.0)
    return replace(profile, layers=tuple(replace(layer, time=replace(layer.time, cpu_use=use))
                                         for layer in profile.layers))


@pytest.mark.parametrize("held", [0.5, 0.02])
def test_results_show_each_figures_spread_and_whether_it_was_timed_under_load(
        personas: Any, login: Any, zoo_model: Any, held: float) -> None:
    from webapp.profiling.services import record_profile

    profile = _known_profile(held)
    run = ProfileRun.objects.create(project=personas.project, model=zoo_model, batch_size=16)
    record_profile(run.pk, profile)
    page = login(personas.viewer).get(f"/profiling/{run.pk}/").content.decode()
    assert "How well this machine" in page
    for layer in profile.layers:
        assert f"±{layer.time.median_spread * 100:.1f}%" in page
    assert ("Measured under load" in page) == (held > 0.15)
    got = login(personas.viewer).get(f"/api/profile-runs/{run.pk}/").json()["measurement"]
    assert got["under_load"] == (held > 0.15) and got["held"] == pytest.approx(held)
    assert [row["median_spread"] for row in got["layers"]] == [
        layer.time.median_spread for layer in profile.layers]
