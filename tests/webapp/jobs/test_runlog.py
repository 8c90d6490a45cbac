"""The job log: one file per run, its tail on the job page and the log page, the old text
column moved into the files by migration 0005."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from webapp.jobs import records, runlog
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions, approve

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(personas: Any, source: Any) -> Job:
    return approve(personas.member, source, RunOptions(steps=8), start=False)


def test_a_line_goes_to_the_latest_runs_file(job: Job) -> None:
    records.log(job.pk, "before any run")
    Job.objects.filter(pk=job.pk).update(runs=2)
    job.refresh_from_db()
    records.log(job.pk, "in run 2")
    first, second = runlog.path(job, 1).read_text(), runlog.path(job, 2).read_text()
    assert "approved by member" in first and "before any run" in first
    assert "in run 2" in second and "in run 2" not in first
    assert job.log.index("before any run") < job.log.index("in run 2")
    assert runlog.path(job, 1).parent == runlog.run_dir(job, 1)


def test_the_tail_starts_at_a_whole_line(job: Job) -> None:
    for i in range(200):
        runlog.write(job, 1, f"line {i:03d} " + "x" * 40)
    tail = runlog.tail(job, 1, 1024)
    assert tail.cut and tail.size > 1024 and len(tail.text.encode()) <= 1024
    assert tail.text.split(" ")[2].startswith("line") and tail.text.endswith("x\n")
    assert "line 199" in tail.text and "line 000" not in tail.text
    whole = runlog.tail(job, 1, None)
    assert not whole.cut and "line 000" in whole.text
    assert runlog.tail(job, 7).text == ""  # a run that logged nothing


def test_the_log_page_tails_a_run_for_anyone_who_may_view(login: Any, personas: Any,
                                                          job: Job) -> None:
    for i in range(3000):
        runlog.write(job, 1, f"line {i:04d} " + "y" * 40)
    client = login(personas.viewer)
    response = client.get(f"/jobs/{job.pk}/log/?kb=1")
    text = response.content.decode()
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert "the last 1 KB of" in text and "kb=0" in text and "line 2999" in text
    assert "line 0000" in client.get(f"/jobs/{job.pk}/log/?run=1&kb=0").content.decode()
    assert "line 0000" not in client.get(f"/jobs/{job.pk}/log/").content.decode()
    bad = client.get(f"/jobs/{job.pk}/log/?run=5")
    assert bad.status_code == 400 and "run" in bad.content.decode()
    assert login(personas.outsider).get(f"/jobs/{job.pk}/log/").status_code == 404


def test_the_job_page_shows_the_latest_runs_tail_and_links_the_rest(
    login: Any, personas: Any, job: Job
) -> None:
    Job.objects.filter(pk=job.pk).update(runs=2)
    records.log(job.pk, "run 2 said this")
    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert "run 2 said this" in page and "approved by member" not in page
    assert f"/jobs/{job.pk}/log/?run=1" in page


@pytest.mark.django_db(transaction=True)
def test_old_log_text_moves_into_the_files_and_back(personas: Any) -> None:
    def migrate(target: str) -> Any:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate([("jobs", target)])
        return executor.loader.project_state([("jobs", target)]).apps

    old = migrate("0004_measured_profiles")
    try:
        Old = old.get_model("jobs", "Job")
        made = Old.objects.create(
            project_id=personas.project.pk, name="j", plan={}, model_name="ctr_dnn", steps=8,
            batch_size=64, predicted_throughput=1.0, predicted_cost_per_hour=1.0, runs=2,
            log="2026-11-30 10:00:00 run 2 finished\n")
        new = migrate("0005_job_log_files").get_model("jobs", "Job").objects.get(pk=made.pk)
        assert runlog.path(new, 2).read_text() == "2026-11-30 10:00:00 run 2 finished\n"
        back = migrate("0004_measured_profiles").get_model("jobs", "Job")
        assert back.objects.get(pk=made.pk).log == "2026-11-30 10:00:00 run 2 finished\n"
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
