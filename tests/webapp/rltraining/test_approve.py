"""Issue 17 item 8: an RL training run's best plan can be approved, through the jobs app's
approve page (the same binding checks as every plan)."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background.services import run_work
from webapp.planning.models import PlanResult
from webapp.planning.services import start_planning
from webapp.rltraining import services

pytestmark = pytest.mark.django_db


def test_best_plan_goes_to_the_approve_page(personas: Any, profiled: Any, cluster: Any,
                                            login: Any) -> None:
    planning = start_planning(personas.member, profiled.model, cluster, 50_000, ["exact"])
    run_work(planning.work.pk)
    run = services.start_training(personas.member, planning, budget_s=3, max_updates=5,
                                  samples=8)
    run_work(run.work.pk)
    run.refresh_from_db()
    assert run.best_plan["feasible"]
    page = login(personas.member).get(f"/rl/{run.pk}/").content.decode()
    assert 'id="approve-best"' in page
    assert 'id="approve-best"' not in login(personas.viewer).get(f"/rl/{run.pk}/").content.decode()

    response = login(personas.member).post(f"/rl/{run.pk}/approve/")
    result = PlanResult.objects.get(request=planning, scheduler=f"rl-train #{run.pk}")
    assert response.status_code == 302 and response["Location"] == f"/jobs/approve/{result.pk}/"
    assert result.plan == run.best_plan and result.gap_to_exact is not None
    assert result.cost_per_hour == pytest.approx(run.best_plan["cost_per_hour"])
    again = login(personas.member).post(f"/rl/{run.pk}/approve/")
    assert again["Location"] == response["Location"]  # one row per run
    assert login(personas.member).get(response["Location"]).status_code == 200

    assert login(personas.viewer).post(f"/rl/{run.pk}/approve/").status_code == 403
    assert login(personas.outsider).post(f"/rl/{run.pk}/approve/").status_code == 404
