"""Runs compared and a job's samples as CSV (issue 25.12): every run's curve, every
sample's row; other projects' jobs answer 404 like their pages, bad ids 400 naming the
parameter."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from webapp.background.models import Status, Work
from webapp.jobs import records, samples, services
from webapp.jobs.models import Job
from webapp.jobs.services import RUN_KIND, PlanSource, RunOptions

pytestmark = pytest.mark.django_db


def _run(job: Job, run: int, count: int, loss0: float) -> None:
    for i in range(count):
        records.record_sample(job.pk, run, {  # type: ignore[arg-type]
            "step": i, "total_steps": count, "elapsed_s": 0.5 * (i + 1),
            "samples_per_s": 100.0 + run, "loss": None if i == 0 else loss0 - i / 100,
            "cost": 0.001 * i, "stages": [], "run_samples_per_s": 99.0 if i > 1 else None},
            base_cost=0.0)


@pytest.fixture
def two_runs(personas: Any, source: Any) -> Job:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    _run(job, 1, 5, 0.7)
    second = Work.objects.create(project=personas.project, kind=RUN_KIND, status=Status.RUNNING,
                                 created_by=personas.member, params={"job": job.pk, "run": 2})
    Job.objects.filter(pk=job.pk).update(work=second, runs=2)
    _run(job, 2, 3, 0.6)
    return Job.objects.get(pk=job.pk)


@pytest.fixture
def other_project_job(personas: Any) -> Job:
    """A job of a project none of the personas but `outsider` belongs to."""
    from webapp.projects.services import create_project

    project = create_project(personas.outsider, "Elsewhere")
    source = PlanSource(project=project, plan=samples.ctr_plan(), model_name=samples.MODEL,
                        model_size=samples.SIZE, batch_size=samples.BATCH, scheduler="exact")
    return services.approve(personas.outsider, source, RunOptions(steps=8), start=False)


def test_the_csv_has_every_sample_of_every_run(login: Any, personas: Any, two_runs: Job) -> None:
    response = login(personas.viewer).get(f"/jobs/{two_runs.pk}/metrics.csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert f'heterps-job-{two_runs.pk}-metrics.csv' in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(table) == 8 and [r["run"] for r in table] == ["1"] * 5 + ["2"] * 3
    assert table[0]["loss"] == "" and float(table[1]["loss"]) == pytest.approx(0.69)
    assert table[2]["samples_per_s_run"] == "99.0" and table[0]["samples_per_s_run"] == ""
    one = login(personas.viewer).get(f"/jobs/{two_runs.pk}/metrics.csv?run=2")
    assert len(one.content.decode().splitlines()) == 1 + 3


@pytest.mark.parametrize("run", ["0", "3", "x", "-1", "99999999999999999999999"])
def test_a_bad_run_is_named(login: Any, personas: Any, two_runs: Job, run: str) -> None:
    response = login(personas.member).get(f"/jobs/{two_runs.pk}/metrics.csv?run={run}")
    assert response.status_code == 400 and response.content.decode().startswith("run: ")


def test_the_compare_page_overlays_every_run(login: Any, personas: Any, two_runs: Job,
                                             source: Any) -> None:
    other = services.approve(personas.member, source, RunOptions(steps=8))
    _run(other, 1, 4, 0.8)
    page = login(personas.member).get(f"/jobs/compare/?job={two_runs.pk}&job={other.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    curves = json.loads(html.split('id="compare-curves" type="application/json">')[1]
                        .split("</script>")[0])
    assert [(c["job"], c["run"]) for c in curves] == [(two_runs.pk, 1), (two_runs.pk, 2),
                                                       (other.pk, 1)]
    assert curves[0]["step"] == [1, 2, 3, 4] and len(curves[0]["elapsed_s"]) == 5
    assert f"/jobs/{two_runs.pk}/metrics.csv" in html
    assert f'href="/jobs/compare/?job={two_runs.pk}"' in login(personas.member).get(
        f"/jobs/{two_runs.pk}/").content.decode()


def test_another_projects_job_is_not_found(login: Any, personas: Any, two_runs: Job,
                                           other_project_job: Job) -> None:
    client = login(personas.member)
    assert client.get(f"/jobs/compare/?job={two_runs.pk}&job={other_project_job.pk}"
                      ).status_code == 404
    assert client.get(f"/jobs/compare/?job={other_project_job.pk + 1000}").status_code == 404
    assert client.get(f"/jobs/{other_project_job.pk}/metrics.csv").status_code == 404


@pytest.mark.parametrize("query", ["job=abc", "job=0", "job=1.5",
                                   "&".join(f"job={i}" for i in range(1, 11))])
def test_bad_job_ids_are_named(login: Any, personas: Any, query: str) -> None:
    response = login(personas.member).get(f"/jobs/compare/?{query}")
    assert response.status_code == 400 and "job: " in response.content.decode()


def test_the_form_keeps_the_jobs_compared_ticked(login: Any, personas: Any,
                                                  two_runs: Job) -> None:
    html = login(personas.member).get(f"/jobs/compare/?job={two_runs.pk}").content.decode()
    assert f'name="job" value="{two_runs.pk}" checked' in html
