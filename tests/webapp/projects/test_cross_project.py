"""Issue 12 item 1: ids inside bodies and params must name objects of the project the call
names, and a foreign id gets exactly the answer a missing id gets (an outsider learns
nothing about which ids exist)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps

from webapp.background.models import Work
from webapp.projects.services import create_project

pytestmark = pytest.mark.django_db
MISSING = 987_654


@pytest.fixture
def foreign(personas: Any, plan_result: Any) -> dict[str, Any]:
    """One object of each kind in Alpha (the personas' project)."""

    project = personas.project
    request = plan_result.request
    job = apps.get_model("jobs", "Job").objects.create(
        project=project, name="j", plan=plan_result.plan, model_name="ctr_dnn", steps=5,
        batch_size=64, predicted_throughput=1.0, predicted_cost_per_hour=1.0)
    profile = apps.get_model("profiling", "ProfileRun").objects.create(
        project=project, model=request.model, batch_size=64)
    rl = apps.get_model("rltraining", "RLTrainingRun").objects.create(
        project=project, request=request)
    return {"job-run": ("job", job.pk, {"run": 2}), "plan": ("request", request.pk, {}),
            "profile": ("run", profile.pk, {}), "rl-train": ("run", rl.pk, {})}


def _start(client: Any, project: int, kind: str, params: dict[str, Any]) -> Any:
    return client.post("/api/work/", {"project": project, "kind": kind, "params": params},
                       content_type="application/json")


@pytest.mark.parametrize("kind", ["job-run", "plan", "profile", "rl-train"])
@pytest.mark.parametrize("who", ["outsider", "viewer"])
def test_work_params_naming_another_projects_object_get_the_missing_id_answer(
    personas: Any, login: Any, foreign: dict[str, Any], kind: str, who: str
) -> None:
    user = getattr(personas, who)
    own = create_project(user, "Mine")  # a viewer of Alpha creates a project of their own
    field, pk, extra = foreign[kind]
    client = login(user)
    before = Work.objects.count()
    answer = _start(client, own.pk, kind, {field: pk, **extra})
    missing = _start(client, own.pk, kind, {field: MISSING, **extra})
    assert answer.status_code == 400, answer.content
    assert answer.json() == missing.json()
    assert field in answer.json()
    assert Work.objects.count() == before  # nothing queued, nothing of Alpha touched


# A job's runs start through the job only (tests/webapp/jobs/test_run_starts.py).
@pytest.mark.parametrize("kind", ["plan", "profile", "rl-train"])
def test_a_member_may_still_start_work_on_their_projects_objects(
    personas: Any, login: Any, foreign: dict[str, Any], kind: str
) -> None:
    field, pk, extra = foreign[kind]
    answer = _start(login(personas.member), personas.project.pk, kind, {field: pk, **extra})
    assert answer.status_code == 201, answer.content


def test_a_cluster_cannot_take_another_projects_resource_types(
    personas: Any, login: Any, catalogue: list[Any]
) -> None:
    own = create_project(personas.viewer, "Mine")
    client = login(personas.viewer)
    body = {"project": own.pk, "name": "stolen"}
    foreign = client.post("/api/clusters/", body | {"resource_types": [catalogue[0].pk]},
                          content_type="application/json")
    missing = client.post("/api/clusters/", body | {"resource_types": [MISSING]},
                          content_type="application/json")
    assert foreign.status_code == missing.status_code == 400
    assert foreign.json() == missing.json()


def test_a_planning_request_cannot_mix_projects(
    personas: Any, login: Any, zoo_model: Any
) -> None:
    # The viewer's own project's cluster with Alpha's model: the model is not theirs to edit.
    from webapp.planning.models import Cluster

    own = create_project(personas.viewer, "Mine")
    cluster = Cluster.objects.create(project=own, name="mine")
    client = login(personas.viewer)
    answer = client.post("/api/planning-requests/", {
        "model": zoo_model.pk, "cluster": cluster.pk, "throughput_target": 10.0},
        content_type="application/json")
    assert answer.status_code in (403, 404)
    assert not apps.get_model("planning", "PlanningRequest").objects.filter(
        cluster=cluster).exists()
