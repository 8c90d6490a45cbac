"""Managed recovery in a real browser (issue 26's acceptance), as a plain member: a plan with
a spot stage shows its saving against the all-on-demand optimum and the interruptions
expected over the job; the approved job is stopped by two spot notices and comes back by
itself each time, finishing; the job page and the cost report itemise the notices.

Who does what: the person approves in the browser; the background sweeper (started as
`manage.py up` starts it, every 0.5 s here) resumes the job after each notice through the
jobs service; each run is executed by this test's main thread with
`background.services.run_work`, as a Celery worker's pool process runs a task in its main
thread (where the launcher holds the SIGTERM handler a spot notice reaches), and the notice
is a real SIGTERM to that process while the run trains (tests/webapp/jobs/test_spot_notice.py
does the same). Screenshots land in test-artifacts/recovery/."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "recovery"
BATCH = 64
# Each notice lands while its run trains (a drain is a few seconds ahead): at 2,000 steps a
# quiet machine finished a run before the notice, whose SIGTERM then met no handler and
# ended pytest (CI preflight, stop 32).
STEPS = 12000


def _spot_plan(personas: Any, monkeypatch: Any) -> Any:
    """The tiny CTR-DNN planned exactly on one CPU type with a spot offer (its figures
    measured on this machine, as its agent's task body measures them), for a job of 1e9
    samples: every stage takes spot, and the plan counts the interruptions expected."""
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from webapp.background import services as work_services
    from webapp.background.models import Status
    from webapp.catalogue.models import ResourceType
    from webapp.modelzoo.services import add_zoo_model
    from webapp.planning import services as planning
    from webapp.profiling import remote
    from webapp.profiling.models import Origin, ProfileRun, ResourceProfile
    from webapp.profiling.services import record_profile

    project = personas.project
    cheap = ResourceType.objects.create(
        project=project, name="cpu-local", kind="cpu", price_per_hour=0.50, count=8,
        memory_gb=16, network_gbps=10, spot_price=0.10, interruptions_per_hour=0.5,
        restart_s=30.0)
    model = add_zoo_model(personas.member, project, "ctr_dnn", "tiny")
    run = ProfileRun.objects.create(project=project, model=model, batch_size=BATCH)
    record_profile(run.pk, profile_zoo_model(
        "ctr_dnn", ProfileOptions(threads=1, warmup=0, repeats=1), size="tiny",
        batch_size=BATCH))
    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = ResourceProfile.objects.create(run=run, resource_type=cheap, resource="cpu-local",
                                            queue="heterps.res.cpu-local",
                                            origin=Origin.WAITING)
    assert remote.measure_here(run.pk, origin.pk)["status"] == "measured"
    cluster = planning.create_cluster(personas.member, project, "spot CPU", [cheap])
    request = planning.start_planning(personas.member, model, cluster, 500.0, ["exact"],
                                      batch_size=BATCH, samples=1e9)
    work_services.run_work(request.work_id)  # the planning work, here (no worker runs)
    request.work.refresh_from_db()
    assert request.work.status == Status.SUCCEEDED, request.work.error
    chosen = request.results.get(chosen=True)
    assert {s["market"] for s in chosen.plan["stages"]} == {"spot"}
    return chosen


def _run_with_notice(job_id: int, notice: bool) -> None:
    """Execute the job's queued run here; with `notice`, a SIGTERM once it trains."""
    from webapp.background import services as work_services
    from webapp.jobs.models import Job, JobMetric

    job = Job.objects.get(pk=job_id)
    run, start = job.runs, job.last_step

    ended = threading.Event()

    def send() -> None:
        wait_until(lambda: ended.is_set() or JobMetric.objects.filter(
            job_id=job_id, run=run, step__gte=start + 4).exists(), 240, f"run {run} training")
        if not ended.is_set():  # the run still holds the launcher's SIGTERM handler
            os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send) if notice else None
    if sender is not None:
        sender.start()
    try:
        work_services.run_work(job.work_id)
    finally:
        ended.set()
        if sender is not None:
            sender.join(260)


def _next_run_queued(job_id: int, run: int) -> None:
    from webapp.background.models import Status
    from webapp.jobs.models import Job

    wait_until(lambda: Job.objects.filter(pk=job_id, runs=run, work__status=Status.QUEUED)
               .exists(), 60, f"the sweeper resuming the job as run {run}")


def test_a_spot_job_preempted_twice_finishes_by_itself_and_is_itemised(
    page: Any, shoot: Any, asgi_url: str, personas: Any, sign_in: Any, settings: Any,
    tmp_path: Path, monkeypatch: Any,
) -> None:
    from webapp.background import sweeper
    from webapp.background.models import Status
    from webapp.jobs.models import Job

    settings.VAR_DIR = tmp_path
    settings.WORK_SWEEP_S = 0.5
    chosen = _spot_plan(personas, monkeypatch)
    sign_in(page, personas.member, asgi_url)

    # The plan page: the spot saving and the interruptions expected over the job.
    page.goto(f"{asgi_url}/planning/result/{chosen.pk}/")
    saving = page.inner_text("#spot-saving")
    assert "per hour less" in saving and "all on demand" in saving
    expected = chosen.plan["expected_interruptions"]
    assert expected > 0 and page.inner_text("#expected-interruptions") == f"{expected:.2f}"
    shoot(page, "plan")

    # Approve: a spot plan gets three automatic restarts unless the member says otherwise.
    page.click("#approve-form button[type=submit]")
    page.wait_for_url("**/jobs/approve/*/")
    assert page.input_value("#id_max_restarts") == "3"
    page.fill("#id_steps", str(STEPS))
    page.fill("#id_bind_cpu-local", "cpu")
    page.click("#approve-options button[type=submit]")
    page.wait_for_url("**/jobs/*/")
    job = Job.objects.get()
    assert job.max_restarts == 3 and job.status == Status.QUEUED

    started = sweeper.start_periodic()
    try:
        for run in (1, 2):  # a spot notice stops each; the sweeper resumes the job
            _run_with_notice(job.pk, notice=True)
            _next_run_queued(job.pk, run + 1)
            page.reload()
            assert f"run {run + 1} started automatically after the spot notice at step" \
                in page.inner_text("#log")
        _run_with_notice(job.pk, notice=False)  # run 3 trains to the end
    finally:
        if started:
            sweeper.stop_periodic()
    job.refresh_from_db()
    assert job.work is not None and job.work.status == Status.SUCCEEDED, job.work.error
    assert (job.runs, job.restarts) == (3, 2) and job.summary["steps"] == STEPS

    page.goto(f"{asgi_url}/jobs/{job.pk}/")
    page.wait_for_function(
        "() => document.querySelector('[data-field=status]').textContent.trim() === 'succeeded'",
        timeout=30_000)
    card = page.locator("#interruptions")
    assert card.locator("[data-field=preemptions]").inner_text() == "2"
    assert card.locator("[data-field=restarts]").inner_text() == "2"
    assert card.locator("[data-field=automatic-restarts]").inner_text() == "2 of 3"
    assert card.locator("[data-field=saved-by-spot]").inner_text().startswith("$")
    assert "steps trained again" in card.inner_text()
    shoot(page, "job")

    # The cost report itemises the notices on the job's row.
    page.goto(f"{asgi_url}/costs/")
    row = page.locator("tr", has=page.locator(f"a[href='/jobs/{job.pk}/']"))
    assert row.locator("[data-field=preemptions]").inner_text() == "2 / 2"
    saved = row.locator("[data-field=saved-by-spot]").inner_text()
    assert float(saved.replace(",", "")) > 0  # a figure, not "-" (prices unknown)
    assert float(row.locator("[data-field=restart-cost]").inner_text()) > 0
    assert "lost to preemption" in row.inner_text()
    # Every column of the report fits 1280 px: the table does not scroll sideways.
    wrap = page.locator(".table-wrap:has(table.cost-jobs)")
    assert wrap.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
    shoot(page, "costs")
