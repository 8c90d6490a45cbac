"""Setting budgets: the approve form and the job API take an optional `budget` (dollars,
greater than 0), a job's members change it, a project's owners set the project's; bad
input is refused naming `budget`, and roles are held (a member cannot set the project's
budget, a viewer not a job's, an outsider learns of neither: 404)."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions
from webapp.projects.models import Project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bad", [0, -1, "abc", 1e13, "nan"])
def test_the_job_api_refuses_a_bad_budget_naming_it(bad: Any, personas: Any, plan_result: Any,
                                                    login: Any) -> None:
    response = login(personas.member).post(
        "/api/jobs/", {"plan_result": plan_result.pk, "steps": 4, "budget": bad},
        content_type="application/json")
    assert response.status_code == 400, response.content
    assert "budget" in response.json()
    assert not Job.objects.exists()


def test_the_job_api_takes_a_budget(personas: Any, plan_result: Any, login: Any) -> None:
    response = login(personas.member).post(
        "/api/jobs/", {"plan_result": plan_result.pk, "steps": 4, "budget": 2.5},
        content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["budget"] == 2.5 and Job.objects.get().budget == 2.5


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "1e13", "nan"])
def test_the_approve_form_refuses_a_bad_budget_on_its_field(
    bad: str, personas: Any, plan_result: Any, login: Any
) -> None:
    response = login(personas.member).post(f"/jobs/approve/{plan_result.pk}/",
                                           {"steps": "4", "budget": bad, "runner": "pipeline"})
    assert response.status_code == 400
    assert "budget" in response.context["form"].errors
    assert not Job.objects.exists()


def test_the_approve_form_takes_a_budget(personas: Any, plan_result: Any, login: Any) -> None:
    response = login(personas.member).post(f"/jobs/approve/{plan_result.pk}/",
                                           {"steps": "4", "lr": "0.05", "budget": "3.5",
                                            "bind_cpu": "cpu", "bind_cpu-b": "cpu",
                                            "runner": "pipeline"})
    assert response.status_code == 302, response.context["form"].errors
    job = Job.objects.get()
    assert job.budget == 3.5
    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert "$3.50: $0.0000 spent (0%)" in page
    assert 'id="budget-form"' not in page  # a viewer reads it, has no form


@pytest.fixture
def job(personas: Any, source: Any) -> Job:
    return services.approve(personas.member, source, RunOptions(steps=8), start=False)


def test_members_set_a_jobs_budget_viewers_may_not(personas: Any, job: Job, login: Any) -> None:
    url = f"/api/jobs/{job.pk}/budget/"
    assert login(personas.viewer).post(url, {"budget": 5}, content_type="application/json"
                                       ).status_code == 403
    assert login(personas.outsider).post(url, {"budget": 5}, content_type="application/json"
                                         ).status_code == 404
    assert login(personas.viewer).post(f"/budgets/jobs/{job.pk}/", {"budget": "5"}
                                       ).status_code == 403
    assert Job.objects.get(pk=job.pk).budget is None
    bad = login(personas.member).post(url, {"budget": -2}, content_type="application/json")
    assert bad.status_code == 400 and "budget" in bad.json()
    done = login(personas.member).post(url, {"budget": 5}, content_type="application/json")
    assert done.status_code == 200 and done.json()["budget"] == 5.0
    followed = login(personas.member).post(f"/budgets/jobs/{job.pk}/", {"budget": "zero"},
                                           follow=True).content.decode()
    assert "budget: must be a number" in followed
    assert Job.objects.get(pk=job.pk).budget == 5.0
    login(personas.member).post(f"/budgets/jobs/{job.pk}/", {"budget": ""})
    assert Job.objects.get(pk=job.pk).budget is None  # empty: no budget


def test_only_owners_set_the_projects_budget(personas: Any, login: Any) -> None:
    project = personas.project
    url = f"/api/projects/{project.pk}/budget/"
    for who, status in (("member", 403), ("viewer", 403), ("outsider", 404)):
        response = login(getattr(personas, who)).post(url, {"budget": 100},
                                                      content_type="application/json")
        assert response.status_code == status, who
        page = login(getattr(personas, who)).post(f"/budgets/projects/{project.pk}/",
                                                  {"budget": "100"})
        assert page.status_code == status, who
    assert Project.objects.get(pk=project.pk).budget is None
    for bad in (0, -5, "lots", 1e13):
        refused = login(personas.owner).post(url, {"budget": bad},
                                             content_type="application/json")
        assert refused.status_code == 400 and "budget" in refused.json(), bad
    done = login(personas.owner).post(url, {"budget": 100}, content_type="application/json")
    assert done.status_code == 200 and done.json()["budget"] == 100.0
    page = login(personas.member).get(f"/projects/{project.pk}/").content.decode()
    assert "$100.00: $0.0000 spent (0%)" in page
    assert 'id="project-budget-form"' not in page  # owners only
    assert 'id="project-budget-form"' in login(personas.owner).get(
        f"/projects/{project.pk}/").content.decode()
    cleared = login(personas.owner).post(url, {"budget": None}, content_type="application/json")
    assert cleared.status_code == 200 and cleared.json()["budget"] is None
