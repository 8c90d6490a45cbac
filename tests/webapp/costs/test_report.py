"""The cost report: accrued from runtime samples inside the period, the plan's estimate,
per project, the CSV export, and who sees what."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from webapp.costs import services as costs
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _sample(cost: float, elapsed: float) -> dict[str, Any]:
    return {"step": 1, "total_steps": 8, "elapsed_s": elapsed, "samples_per_s": 100.0,
            "loss": 0.5, "cost": cost, "stages": []}


def _at(job: Job, when: datetime, cost: float, run: int = 1) -> None:
    services.record_sample(job.pk, run, _sample(cost, cost * 1000), base_cost=0.0)
    JobMetric.objects.filter(job=job, cost=cost, run=run).update(recorded_at=when)


def _aware(*args: int) -> datetime:
    return timezone.make_aware(datetime(*args))


@pytest.fixture
def job(personas: Any, source: Any) -> Job:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    _at(job, _aware(2026, 10, 31, 23, 0), 0.25)  # accrued in October
    _at(job, _aware(2026, 11, 1, 1, 0), 0.75)  # 0.50 more in November
    _at(job, _aware(2026, 12, 1, 0, 30), 0.90)  # and 0.15 in December
    return job


def test_accrued_cost_is_split_by_period(personas: Any, job: Job) -> None:
    november = costs.report(personas.viewer, costs.month("2026-11"))
    assert [r.job_id for r in november.rows] == [job.pk]
    assert november.accrued == pytest.approx(0.50)
    assert costs.report(personas.viewer, costs.month("2026-10")).accrued == pytest.approx(0.25)
    assert costs.report(personas.viewer, costs.month("2026-12")).accrued == pytest.approx(0.15)
    assert costs.report(personas.outsider, costs.month("2026-11")).rows == []


def test_the_estimate_is_the_plans_rate_times_its_predicted_time(personas: Any, job: Job) -> None:
    this_month = costs.month(None, today=job.created_at.date())
    row = costs.report(personas.viewer, this_month).rows[0]
    hours = 8 * 64 / job.predicted_throughput / 3600
    assert row.runs == 1
    assert row.estimate == pytest.approx(job.predicted_cost_per_hour * hours)


def test_a_bad_month_names_the_field() -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as caught:
        costs.month("2026-13")
    assert "month" in caught.value.message_dict


def test_the_page_and_csv_say_what_each_figure_covers(login: Any, personas: Any, job: Job) -> None:
    client = login(personas.viewer)
    page = client.get("/costs/?month=2026-11").content.decode()
    assert "Accrued (measured, $ total)" in page and "Estimate <small>($ total; $/hour)" in page
    assert "$0.5000" in page
    response = client.get(f"/costs/export.csv?month=2026-11&project={personas.project.pk}")
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["job_id"], float(r["accrued_usd_total"])) for r in rows] == [(str(job.pk), 0.5)]
    assert rows[0]["period_start"] == "2026-11-01" and rows[0]["period_end"] == "2026-11-30"


def test_outsiders_get_404_for_a_project_they_do_not_belong_to(
    login: Any, personas: Any, job: Job
) -> None:
    client = login(personas.outsider)
    assert client.get(f"/costs/?project={personas.project.pk}").status_code == 404
    assert client.get(f"/api/costs/?project={personas.project.pk}").status_code == 404
    assert client.get("/costs/export.csv?month=2026-11").content.decode().count("\n") == 1


def test_the_api_reports_totals(login: Any, personas: Any, job: Job) -> None:
    data = login(personas.member).get("/api/costs/?month=2026-11").json()
    assert data["accrued_usd_total"] == pytest.approx(0.5)
    assert [p["project"] for p in data["projects"]] == ["Alpha"]
    assert login(personas.member).get("/api/costs/?month=11-2026").status_code == 400
