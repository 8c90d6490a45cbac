"""The closed loop in a real browser (issue 16's acceptance): approve a plan whose T4 stage
is bound to this CPU and run it -> the substitute banner and both predictions -> it finishes
-> its measured profile is on the model page -> "re-plan with measured numbers" makes a new
planning request whose plan differs from the one that ran, with the difference shown.
Screenshots of the job page and the cost report at 1280 and 390 px land in
test-artifacts/closed-loop/. Runs embedded and, with DATABASE_URL/REDIS_URL, on
PostgreSQL + Redis (the worker in-process either way)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "closed-loop"
BATCH = 64


def _planned(personas: Any, monkeypatch: Any) -> Any:
    """A profiled tiny CTR-DNN planned exactly on a cheap CPU type and the T4, at a target
    where the optimum uses both (found on this machine's profile, not fixed). The CPU type's
    figures are measured on this machine by its agent's task body (as a worker here runs
    it), so a run here compares it like with like (issue 23: provenance, not names)."""
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from heterps_core.schedulers.exact import exact_plan
    from webapp.background import services as work_services
    from webapp.background.models import FINISHED, Status
    from webapp.catalogue.demo import CatalogueDemo
    from webapp.catalogue.models import ResourceType
    from webapp.modelzoo.services import add_zoo_model
    from webapp.planning import services as planning
    from webapp.profiling import remote
    from webapp.profiling.models import Origin, ProfileRun, ResourceProfile
    from webapp.profiling.services import record_profile

    project = personas.project
    CatalogueDemo().load(project)
    # Enough units that a split beats the T4 alone at some target (measured figures).
    cheap = ResourceType.objects.create(project=project, name="cpu-local", kind="cpu",
                                        price_per_hour=0.05, count=8, memory_gb=16,
                                        network_gbps=10)
    t4 = ResourceType.objects.get(project=project, name="t4")
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
    cluster = planning.create_cluster(personas.member, project, "cheap CPU and T4", [cheap, t4])
    instance, _, _ = planning.build_request_instance(model, cluster, BATCH, 1.0, None)
    target = 1_000.0
    while {s.resource for s in exact_plan(instance.with_target(target)).stages} != {
            "cpu-local", "t4"}:
        target *= 1.2
        assert target < 1e8, "no target splits the chain between the two types"
    request = planning.start_planning(personas.member, model, cluster, target, ["exact"],
                                      batch_size=BATCH)
    # The in-process worker may have taken the work already: then this call leaves it to
    # that worker, and the test waits for it to finish.
    work_services.run_work(request.work_id)
    deadline = time.monotonic() + 120
    request.work.refresh_from_db()
    while request.work.status not in FINISHED and time.monotonic() < deadline:
        time.sleep(0.2)
        request.work.refresh_from_db()
    assert request.work.status == Status.SUCCEEDED, (request.work.status, request.work.error)
    return model, request.results.get(chosen=True)


def test_run_on_a_substitute_then_replan_with_measured_numbers(
    page: Any, browser: Any, shoot: Any, asgi_url: str, personas: Any, worker: Any, until: Any,
    settings: Any, tmp_path: Path, monkeypatch: Any,
) -> None:
    from webapp.jobs.models import Job, Replan
    from webapp.planning.models import PlanResult

    # Runs keep logs and checkpoints under VAR_DIR/jobs/ID: a fresh one per test database.
    settings.VAR_DIR = tmp_path
    model, chosen = _planned(personas, monkeypatch)
    personas.member.set_password("pw-member-16")
    personas.member.save()
    page.goto(f"{asgi_url}/login/")
    page.fill("#id_username", "member")
    page.fill("#id_password", "pw-member-16")
    page.click("button[type=submit]")
    page.wait_for_url(f"{asgi_url}/")

    # Approve the chosen plan with its T4 bound to this CPU, and run it.
    page.goto(f"{asgi_url}/planning/result/{chosen.pk}/")
    page.click("#approve-form button[type=submit]")
    page.wait_for_url("**/jobs/approve/*/")
    page.fill("#id_bind_t4", "cpu")
    page.click("#approve-options button[type=submit]")
    page.wait_for_url("**/jobs/*/")
    job_url = page.url
    job = Job.objects.get()

    # While it runs: the banner and both predictions, each labelled.
    banner = page.locator("#substitute-banner")
    banner.wait_for()  # the page reloads itself once the run ends
    assert "(t4) ran on cpu" in banner.inner_text()
    text = page.locator("#job").inner_text()
    assert "Throughput, plan estimate (for the planned hardware, which did not run)" in text
    assert "Throughput, predicted for what ran" in text

    # It finishes (the page reloads itself when its websocket says so).
    page.wait_for_function(
        "() => document.querySelector('[data-field=status]').textContent.trim() === 'succeeded'",
        timeout=180_000)
    page.wait_for_selector("#replan")
    job.refresh_from_db()
    as_run = job.summary["predicted_throughput_as_run"]
    assert as_run and page.inner_text("[data-field=as-run]").replace(",", "") == f"{as_run:.1f}"
    assert "Prediction error (vs predicted for what ran)" in page.inner_text("#job")
    # A row per stage, one for the parameter server the plan places (ctr_dnn has sparse
    # tables), and the total.
    parts = len(job.plan["stages"]) + (1 if job.plan.get("parameter_server") else 0)
    assert page.locator("#accrual-stages tbody tr").count() == parts + 1

    # The measured profile is on the model page, with its provenance.
    page.goto(f"{asgi_url}/models/{model.pk}/")
    assert f"measured in job {job.pk}, run 1" in page.inner_text("body")

    # The job page offers the re-plan: the what-if against the plan that ran.
    page.goto(job_url)
    replan = page.locator("#replan")
    assert replan.locator("#corrections tbody tr").count() >= 1
    assert f"measured in job {job.pk}, run 1" in replan.inner_text()
    what_if = replan.locator("#replan-what-if").inner_text()
    assert "This job's plan, as estimated" in what_if and "Re-planned with the measured" in what_if
    assert "per hour" in replan.locator("#replan-difference").inner_text()
    shoot(page, "job")
    page.click("#replan-button")
    page.wait_for_url("**/planning/*/")
    until(page, "#comparison")

    # Back on the job page: the new request's plan against the one that ran.
    page.goto(job_url)
    shown = page.locator("#replans li").first.inner_text()
    assert "chosen by exact" in shown and "vs this job's plan as estimated" in shown
    new = PlanResult.objects.get(request_id=Replan.objects.get(job=job).request_id, chosen=True)
    different = (new.plan["assignment"] != job.plan["assignment"]
                 or [s["units"] for s in new.plan["stages"]]
                 != [s["units"] for s in job.plan["stages"]])
    assert different, "re-planning with the measured numbers kept the plan that ran"
    assert f"${new.cost_per_hour:.3f} per hour (estimate)" in shown
    shoot(page, "job-replanned")

    page.goto(f"{asgi_url}/costs/")
    report = page.inner_text("body")
    assert "succeeded" in report and "start-up, slower, stopped early" in report
    shoot(page, "costs")
