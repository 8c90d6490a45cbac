"""The plan page's throughput band: the chosen plan re-priced with its figures' spread."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.profiler import ProfileOptions, profile_zoo_model
from heterps_core.profiler.measure import Precision, repeat_until_known
from heterps_core.throughput_band import throughput_band
from webapp.planning import services
from webapp.profiling.models import ProfileRun
from webapp.profiling.services import record_profile

pytestmark = pytest.mark.django_db


def test_the_plan_page_states_the_band_of_a_plan_priced_from_measured_figures(
        personas: Any, login: Any, zoo_model: Any, catalogue: list[Any]) -> None:
    with repeat_until_known(Precision(target=0.5, max_repeats=20)):
        profile = profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=6),
                                    size="tiny", batch_size=16)
    # every figure +-10%: a band wide enough to see, whatever this machine's noise was
    profile = replace(profile, layers=tuple(
        replace(layer, time=replace(layer.time, median_spread=0.10))
        for layer in profile.layers))
    run = ProfileRun.objects.create(project=personas.project, model=zoo_model, batch_size=16)
    record_profile(run.pk, profile)
    cpus = [t for t in catalogue if t.kind == "cpu"]  # estimates scaled from the measurement
    cluster = services.create_cluster(personas.member, personas.project, "cpus", cpus)
    request = services.start_planning(personas.member, zoo_model, cluster, 1_000, ["exact"])
    services.solve_request(request.pk)
    result = request.results.get(scheduler="exact")
    band = throughput_band(Instance.from_dict(result.instance), Plan.from_dict(result.plan))
    assert band is not None and band.low < result.plan["throughput"] < band.high
    page = login(personas.viewer).get(f"/planning/result/{result.pk}/").content.decode()
    assert 'id="throughput-band"' in page and band.range_text().split(" (")[0] in page
    assert "throughput band" not in page.split('id="throughput-band"')[1][:80]
