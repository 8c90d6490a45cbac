"""Issue 25 item 4: a job's runs start only through the jobs service (start, restart,
resume), never as generic work (`POST /api/work/ {"kind": "job-run"}`), and a run number
has one rule: the job's next run, a plain integer.

Before the fix, any member could start run 1 again through /api/work/ while it ran or after
it finished (two attempts' metrics interleaved, the cost counted twice), `"run": true` was
taken as run 1 and `"run": 10**30` was accepted and then failed with an OverflowError."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.background import services as work_services
from webapp.background.models import Status, Work
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions
from webapp.projects.services import create_project

pytestmark = pytest.mark.django_db


def _start_as_work(client: Any, project: int, params: dict[str, Any]) -> Any:
    return client.post("/api/work/", {"project": project, "kind": services.RUN_KIND,
                                      "params": params}, content_type="application/json")


@pytest.fixture
def job(personas: Any, source: Any) -> Job:
    """A job whose run 1 is queued (approved and started by a member)."""
    return services.approve(personas.member, source, RunOptions(steps=8))


@pytest.mark.parametrize("run_state", [Status.QUEUED, Status.RUNNING, Status.SUCCEEDED,
                                       Status.FAILED])
@pytest.mark.parametrize("run", [1, 2, True, 10**30])
def test_a_member_cannot_start_a_run_as_generic_work(
    personas: Any, login: Any, job: Job, run_state: str, run: Any
) -> None:
    Work.objects.filter(pk=job.work_id).update(status=run_state)
    before = Work.objects.count()
    answer = _start_as_work(login(personas.member), personas.project.pk,
                            {"job": job.pk, "run": run})
    assert answer.status_code == 400, answer.content
    problem = " ".join(answer.json()["kind"])
    assert "/api/jobs/" in problem and "restart" in problem, problem
    assert Work.objects.count() == before
    assert Job.objects.get(pk=job.pk).runs == 1


def test_a_viewer_cannot_start_a_run_as_generic_work(
    personas: Any, login: Any, job: Job
) -> None:
    before = Work.objects.count()
    answer = _start_as_work(login(personas.viewer), personas.project.pk,
                            {"job": job.pk, "run": 2})
    assert answer.status_code == 403, answer.content
    assert Work.objects.count() == before


@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_another_projects_job_in_the_body_gets_the_missing_id_answer(
    personas: Any, login: Any, job: Job, who: str
) -> None:
    user = getattr(personas, who)
    own = create_project(user, "Mine")
    client = login(user)
    foreign = _start_as_work(client, own.pk, {"job": job.pk, "run": 2})
    missing = _start_as_work(client, own.pk, {"job": 987_654, "run": 2})
    assert foreign.status_code == missing.status_code == 400
    assert foreign.json() == missing.json()
    assert "job" in foreign.json()
    assert Job.objects.get(pk=job.pk).runs == 1


def test_the_jobs_service_still_starts_restarts_and_numbers_runs(
    personas: Any, login: Any, job: Job
) -> None:
    client = login(personas.member)
    again = client.post(f"/api/jobs/{job.pk}/restart/")
    assert again.status_code == 400, again.content  # run 1 is still queued
    assert "still" in str(again.json())
    Work.objects.filter(pk=job.work_id).update(status=Status.SUCCEEDED)
    second = client.post(f"/api/jobs/{job.pk}/restart/")
    assert second.status_code == 200, second.content
    job.refresh_from_db()
    assert job.runs == 2 and job.work is not None
    assert job.work.params["run"] == 2
    assert login(personas.viewer).post(f"/api/jobs/{job.pk}/restart/").status_code == 403


@pytest.mark.parametrize("run", [True, 10**30, 0, -1, 1, 3, "2", 2.0])
def test_a_run_number_other_than_the_next_one_is_refused_naming_run(
    personas: Any, job: Job, run: Any
) -> None:
    """The kind's own check, whoever starts it: the job's next run (2 here), an int."""
    Work.objects.filter(pk=job.work_id).update(status=Status.SUCCEEDED)
    with pytest.raises(ValidationError) as caught:
        work_services.start_work(personas.member, personas.project, services.RUN_KIND,
                                 {"job": job.pk, "run": run}, by_owner=True)
    assert "run" in caught.value.message_dict, caught.value.message_dict
    assert "the job's next run is 2" in " ".join(caught.value.message_dict["run"])
    assert Job.objects.get(pk=job.pk).runs == 1
