"""A resource type's restart time and where it comes from (issue 26.1): set on the type,
else the median start-up of its latest runs measured like with like (RestartSample, written
by the jobs app: tests/webapp/jobs/test_substitutes.py runs them), else the assumed default.
"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.catalogue import services
from webapp.catalogue.models import RESTART_RUNS, RestartSample
from webapp.catalogue.validation import DEFAULT_RESTART_S

pytestmark = pytest.mark.django_db
SPOT = {"name": "spotty", "kind": "cpu", "price_per_hour": 1.0, "count": 4, "memory_gb": 8,
        "network_gbps": 10, "spot_price": 0.3, "interruptions_per_hour": 0.01}


def test_unmeasured_is_assumed_and_says_so(personas: Any) -> None:
    spotty = services.create(personas.member, personas.project, SPOT)
    assert spotty.restart_s is None
    figure = spotty.restart()
    assert (figure.seconds, figure.source) == (DEFAULT_RESTART_S, "assumed")
    assert spotty.market is not None and spotty.market.restart_s == DEFAULT_RESTART_S


def test_measured_is_the_median_of_the_latest_runs(personas: Any) -> None:
    spotty = services.create(personas.member, personas.project, SPOT)
    for run, seconds in enumerate([30.0, 10.0, 20.0, 400.0], start=1):
        RestartSample.objects.create(project=personas.project, resource_type=spotty,
                                     source=f"job 7 run {run}", startup_s=seconds)
    figure = spotty.restart()
    assert (figure.seconds, figure.source) == (25.0, "measured")
    assert figure.label.startswith("median start-up of 4 run(s) on this type (job 7 run 4")
    assert spotty.market is not None and spotty.market.restart_s == 25.0
    # Only the latest count: a slow first run ages out.
    for run in range(5, 5 + RESTART_RUNS):
        RestartSample.objects.create(project=personas.project, resource_type=spotty,
                                     source=f"job 7 run {run}", startup_s=12.0)
    assert spotty.restart().seconds == 12.0


def test_a_figure_set_on_the_type_wins(personas: Any, login: Any) -> None:
    spotty = services.create(personas.member, personas.project, {**SPOT, "restart_s": 45})
    RestartSample.objects.create(project=personas.project, resource_type=spotty,
                                 source="job 7 run 1", startup_s=30.0)
    assert spotty.restart()[:2] == (45.0, "given")
    body = login(personas.viewer).get(f"/api/resource-types/{spotty.pk}/").json()
    assert body["restart"] == {"seconds": 45.0, "source": "given",
                               "label": "set on the resource type"}
