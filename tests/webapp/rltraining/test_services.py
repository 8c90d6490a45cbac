"""RL training: a run with a tiny budget stores its per-update curve and its best plan,
which the cost model confirms; bad input names the field; outsiders get 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from webapp.background.models import Status, Work
from webapp.background.services import run_work
from webapp.planning.services import start_planning
from webapp.projects.permissions import PermissionDenied
from webapp.rltraining import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def planning(personas: Any, profiled: Any, cluster: Any) -> Any:
    return start_planning(personas.member, profiled.model, cluster, 50_000, ["exact"])


def test_training_records_the_curve_and_a_plan_the_cost_model_agrees_with(
    personas: Any, planning: Any, login: Any
) -> None:
    run = services.start_training(personas.member, planning, budget_s=5, max_updates=15,
                                  samples=16)
    run_work(run.work.pk)
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    run.refresh_from_db()
    assert [row["update"] for row in run.curve] == list(range(1, 16))
    assert all(set(row) >= {"mean_reward", "best_cost", "entropy"} for row in run.curve)
    instance = Instance.from_dict(planning.instance)
    plan = evaluate(instance, run.best_plan["assignment"])
    assert run.best_plan["cost_per_hour"] == pytest.approx(plan.cost_per_hour)
    assert run.curve[-1]["best_cost"] == pytest.approx(plan.cost_per_hour)
    page = login(personas.viewer).get(f"/rl/{run.pk}/").content.decode()
    assert "Reward curve" in page and "rl-curve" in page and "Best plan found" in page
    assert login(personas.outsider).get(f"/rl/{run.pk}/").status_code == 404


def test_without_a_cap_a_run_is_its_updates_and_the_page_says_so(
    personas: Any, planning: Any, login: Any
) -> None:
    # the work budget is max_updates; no CPU cap unless asked for (issue 21)
    run = services.start_training(personas.member, planning, max_updates=12, samples=8)
    assert run.budget_s is None
    result = services.train(run.pk)
    assert result["updates"] == 12 and not result["capped"] and result["cpu_s"] > 0
    run.refresh_from_db()
    assert [row["update"] for row in run.curve] == list(range(1, 13))
    page = login(personas.viewer).get(f"/rl/{run.pk}/").content.decode()
    assert "12 updates." in page and "CPU-s" not in page


def test_bad_training_requests_name_the_field(personas: Any, planning: Any) -> None:
    for kwargs, field in (({"budget_s": 0}, "budget_s"), ({"max_updates": 0}, "max_updates"),
                          ({"samples": 1}, "samples")):
        with pytest.raises(ValidationError) as err:
            services.start_training(personas.member, planning, **kwargs)
        assert field in err.value.message_dict
    with pytest.raises(PermissionDenied):
        services.start_training(personas.viewer, planning)
    with pytest.raises(Http404):
        services.start_training(personas.outsider, planning)
