"""Issue 17 item 7: one way to name plans and jobs. The dashboard says "Plan #<request>" as
the planning pages do; a job is named after its model, size and plan; the approve page lists
layers by name."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs.services import source_of

pytestmark = pytest.mark.django_db


def test_a_job_is_named_after_model_size_and_plan(plan_result: Any) -> None:
    name = source_of(plan_result).name
    assert name == f"CTR tiny · plan #{plan_result.request_id} exact"


def test_dashboard_and_approve_page_use_planning_names(
    plan_result: Any, personas: Any, login: Any,
) -> None:
    model = plan_result.request.model
    model.layers = [{"index": i, "name": n, "kind": "dense", "parameters": 1,
                     "shardable": False} for i, n in enumerate(["emb", "fc1", "fc2", "out"])]
    model.save()
    client = login(personas.member)
    home = client.get("/").content.decode()
    assert f"Plan #{plan_result.request_id}</a>" in home
    approve = client.get(f"/jobs/approve/{plan_result.pk}/").content.decode()
    stages = plan_result.plan["stages"]
    first = stages[-1]["layers"]
    names = ["emb", "fc1", "fc2", "out"]
    label = names[first[0]] if len(first) == 1 else f"{names[first[0]]} … {names[first[-1]]}"
    assert f"<td>{label}</td>" in approve
    assert "<td>1\u20133</td>" not in approve  # the old "first-last" indices
