"""Job pages and API: who sees what, cancel / restart, the approve interface."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(personas: Any, source: Any) -> Job:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    sample = {"step": 4, "total_steps": 8, "elapsed_s": 1.5, "samples_per_s": 210.0,
              "loss": 0.69, "cost": 0.002, "stages": []}
    services.record_sample(job.pk, 1, sample, base_cost=0.0)
    return Job.objects.select_related("work").get(pk=job.pk)


def test_every_role_sees_the_job_page_with_measured_and_predicted(
    login: Any, personas: Any, job: Job
) -> None:
    for user in (personas.owner, personas.member, personas.viewer):
        page = login(user).get(f"/jobs/{job.pk}/").content.decode()
        assert f"/ws/jobs/work/{job.work_id}/" in page
        assert "210.0</span> samples/s" in page  # measured
        assert f"{job.predicted_throughput:.1f} samples/s" in page  # the plan's estimate
        assert "per hour" in page and "Cost accrued (total" in page
    viewer_page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert "Cancel</button>" not in viewer_page
    assert "Cancel</button>" in login(personas.member).get(f"/jobs/{job.pk}/").content.decode()


def test_a_bsp_pipeline_job_shows_the_bound_of_stages_taking_turns(
    login: Any, personas: Any, source: Any
) -> None:
    stages = source.plan["stages"]
    assert len(stages) == 2
    exact = services.approve(personas.member, source, RunOptions(steps=8, sync_mode="bsp"))
    rates = [stage["throughput"] for stage in stages]
    bound = exact.predicted_throughput * (1 / sum(1 / r for r in rates)) / min(rates)
    assert exact.flushed_throughput == pytest.approx(bound)
    page = login(personas.member).get(f"/jobs/{exact.pk}/").content.decode()
    assert f"Throughput bound, bsp (stages take turns)</dt><dd>{bound:.1f} samples/s" in page
    overlapped = services.approve(personas.member, source, RunOptions(steps=8, sync_mode="async"))
    assert overlapped.flushed_throughput is None
    assert "Throughput bound" not in login(personas.member).get(
        f"/jobs/{overlapped.pk}/").content.decode()


def test_outsiders_get_404_on_pages_and_api(login: Any, personas: Any, job: Job) -> None:
    client = login(personas.outsider)
    for url in (f"/jobs/{job.pk}/", f"/api/jobs/{job.pk}/", f"/api/jobs/{job.pk}/metrics/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 404
    assert client.get("/api/jobs/").json()["results"] == []
    assert f"#{job.pk}" not in client.get("/jobs/").content.decode()


def test_a_viewer_may_not_cancel(login: Any, personas: Any, job: Job) -> None:
    assert login(personas.viewer).post(f"/jobs/{job.pk}/cancel/").status_code == 403
    assert login(personas.viewer).post(f"/api/jobs/{job.pk}/cancel/").status_code == 403


def test_cancel_then_restart_from_the_page(login: Any, personas: Any, job: Job) -> None:
    client = login(personas.member)
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 302
    job.refresh_from_db()
    assert job.work.status == "cancelled"
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Restart from step 0</button>" in page  # no checkpoint: the run never started
    client.post(f"/jobs/{job.pk}/restart/")
    job.refresh_from_db()
    assert job.runs == 2 and job.work.status == "queued"


def test_the_api_lists_and_serves_the_metric_series(login: Any, personas: Any, job: Job) -> None:
    client = login(personas.viewer)
    listed = client.get("/api/jobs/").json()["results"]
    assert [j["id"] for j in listed] == [job.pk]
    assert listed[0]["status"] == "queued" and listed[0]["accrued_cost"] == pytest.approx(0.002)
    series = client.get(f"/api/jobs/{job.pk}/metrics/").json()
    assert [(s["step"], s["samples_per_s"]) for s in series] == [(4, 210.0)]


def test_the_job_list_page_runs_a_bounded_number_of_queries(
    login: Any, personas: Any, source: Any, django_assert_max_num_queries: Any
) -> None:
    for _ in range(12):
        services.approve(personas.member, source, RunOptions(steps=8), start=False)
    client = login(personas.viewer)
    with django_assert_max_num_queries(8):
        page = client.get("/jobs/").content.decode()
    assert page.count('data-job="') == 12


def test_source_of_reads_a_planning_result_row(personas: Any, two_stage_plan: Any) -> None:
    model = SimpleNamespace(zoo_name="ctr_dnn", name="My CTR", size="tiny")
    row = SimpleNamespace(pk=7, project=personas.project, plan=two_stage_plan,
                          scheduler="greedy", request=SimpleNamespace(model=model, batch_size=64))
    source = services.source_of(row)
    assert (source.model_name, source.model_size, source.batch_size, source.scheduler,
            source.result_id) == ("ctr_dnn", "tiny", 64, "greedy", 7)


def test_the_plan_pages_button_opens_the_form_and_approving_starts_a_job(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    form = client.post(f"/jobs/approve/{plan_result.pk}/")  # the plan page's bare button
    assert form.status_code == 200
    page = form.content.decode()
    assert 'name="bind_cpu-b"' in page and 'value="40"' in page and "bsp" in page
    bad = client.post(f"/jobs/approve/{plan_result.pk}/",
                      {"steps": 8, "sync_mode": "bsp", "lr": 0.05, "bind_cpu": "cpu",
                       "bind_cpu-b": "tpu:0"})
    assert bad.status_code == 400 and "tpu" in bad.content.decode()
    done = client.post(f"/jobs/approve/{plan_result.pk}/",
                       {"steps": 8, "sync_mode": "async", "lr": 0.05, "bind_cpu": "cpu",
                        "bind_cpu-b": "cpu:2"})
    job = Job.objects.get()
    assert done.status_code == 302 and done["Location"] == f"/jobs/{job.pk}/"
    assert (job.plan_result_id, job.model_name, job.model_size, job.batch_size) == (
        plan_result.pk, "ctr_dnn", "tiny", 64)
    assert (job.sync_mode, job.binding) == ("async", {"cpu": "cpu", "cpu-b": "cpu:2"})


def test_outsiders_and_viewers_cannot_approve(login: Any, personas: Any, plan_result: Any) -> None:
    assert login(personas.outsider).get(f"/jobs/approve/{plan_result.pk}/").status_code == 404
    assert login(personas.viewer).get(f"/jobs/approve/{plan_result.pk}/").status_code == 403


def test_metric_rows_go_with_the_job(personas: Any, job: Job) -> None:
    job.delete()
    assert not JobMetric.objects.exists()


def test_the_api_approves_a_plan_result_and_names_bad_fields(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    bad = client.post("/api/jobs/", {"plan_result": plan_result.pk, "steps": 8,
                                     "binding": {"cpu-b": "tpu:0"}},
                      content_type="application/json")
    assert bad.status_code == 400 and "binding.cpu-b" in bad.json()
    made = client.post("/api/jobs/", {"plan_result": plan_result.pk, "steps": 8,
                                      "sync_mode": "async"}, content_type="application/json")
    assert made.status_code == 201
    body = made.json()
    assert (body["sync_mode"], body["status"], body["plan_result_id"]) == (
        "async", "queued", plan_result.pk)
    outsider = login(personas.outsider).post(
        "/api/jobs/", {"plan_result": plan_result.pk, "steps": 8}, content_type="application/json")
    assert outsider.status_code == 404
