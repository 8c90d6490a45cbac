"""Issue 12 item 10: re-solving a planning request updates its results in place, so jobs
and old links keep pointing at them."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.planning.models import PlanResult
from webapp.planning.services import solve_request, start_planning

pytestmark = pytest.mark.django_db


def test_resolving_keeps_result_ids_and_links(personas: Any, login: Any, profiled: Any,
                                              cluster: Any) -> None:
    planning = start_planning(personas.member, profiled.model, cluster, 5_000,
                              ["exact", "greedy"])
    solve_request(planning.pk)
    first = dict(PlanResult.objects.filter(request=planning).values_list("scheduler", "pk"))
    assert set(first) == {"exact", "greedy"}
    # A row another part of the app added to this request (an RL run's best plan) stays.
    exact = PlanResult.objects.get(pk=first["exact"])
    extra = PlanResult.objects.create(project=planning.project, request=planning,
                                      scheduler="rl-train #1", plan=exact.plan,
                                      feasible=exact.feasible, throughput=exact.throughput,
                                      cost_per_hour=exact.cost_per_hour)
    solve_request(planning.pk)
    again = dict(PlanResult.objects.filter(request=planning).exclude(pk=extra.pk)
                 .values_list("scheduler", "pk"))
    assert again == first
    assert PlanResult.objects.filter(pk=extra.pk).exists()
    client = login(personas.viewer)
    for pk in first.values():
        assert client.get(f"/planning/result/{pk}/").status_code == 200
    assert PlanResult.objects.filter(request=planning, chosen=True).count() == 1


def test_the_frontier_sweep_stops_when_cancelled(personas: Any, profiled: Any,
                                                 cluster: Any) -> None:
    from heterps_core.progress import Progress

    class Cancelled(Exception):
        pass

    seen: list[str] = []

    def progress(p: Progress) -> None:
        seen.append(p.message)
        if p.message.startswith("exact frontier: target"):
            raise Cancelled  # what report_progress raises (WorkCancelled) after Cancel

    planning = start_planning(personas.member, profiled.model, cluster, 5_000, ["greedy"])
    with pytest.raises(Cancelled):
        solve_request(planning.pk, progress)
    assert not PlanResult.objects.filter(request=planning).exists()
