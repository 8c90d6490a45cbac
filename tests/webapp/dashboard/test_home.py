"""The dashboard: running jobs with live figures, recent plans, this month's cost."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def test_running_jobs_and_this_months_cost(login: Any, personas: Any, source: Any) -> None:
    running = services.approve(personas.member, source, RunOptions(steps=8))
    services.record_sample(running.pk, 1, {
        "step": 2, "total_steps": 8, "elapsed_s": 1.0, "samples_per_s": 321.5, "loss": 0.6,
        "cost": 0.125, "stages": []}, base_cost=0.0)
    stopped = services.approve(personas.member, source, RunOptions(steps=8))
    services.cancel(personas.member, stopped)
    page = login(personas.viewer).get("/").content.decode()
    running_section = page.split('id="running-jobs"')[1].split("</section>")[0]
    assert f"/ws/jobs/work/{running.work_id}/" in running_section and "321.5" in running_section
    assert f"#{stopped.pk} " not in running_section
    month = page.split('id="month-cost"')[1].split("</section>")[0]
    assert "$0.1250" in month and "Accrued (measured, $ total)" in month


def test_outsiders_see_none_of_it(login: Any, personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8))
    page = login(personas.outsider).get("/").content.decode()
    assert f"/jobs/{job.pk}/" not in page and "No job is running." in page


def test_the_dashboard_query_count_does_not_grow_with_jobs(
    login: Any, personas: Any, source: Any, django_assert_max_num_queries: Any
) -> None:
    client = login(personas.viewer)
    services.approve(personas.member, source, RunOptions(steps=8))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as one:
        client.get("/")
    for _ in range(10):
        services.approve(personas.member, source, RunOptions(steps=8))
    with django_assert_max_num_queries(len(one)):
        page = client.get("/").content.decode()
    assert page.count('data-job="') == Job.objects.count() == 11
