"""Managed recovery (issue 26.5) with real runs: a run a spot notice (a real SIGTERM to the
process holding the run, as tests/webapp/jobs/test_spot_notice.py sends it) stops is resumed
by the background sweep from its checkpoint, up to the job's `max_restarts`, and the job
finishes; a cancelled or failed run is never resumed by itself; only members and owners set
how many restarts a job gets."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest
from django.apps import apps

from tests.waiting import wait_until
from webapp.background import leases, sweeper
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.costs import services as costs
from webapp.jobs import interruptions, recovery, samples, services, spot
from webapp.jobs.models import Job, JobMetric
from webapp.jobs.services import RunOptions
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 2000  # the notices must land while the runs train (a drain is a few s ahead)


@pytest.fixture
def spot_result(personas: Any) -> Any:
    """A planning result whose plan runs its dense stage on spot `cpu-b` units (priced by the
    real cost model on an instance with a market), with that instance stored on its
    request, as the planning app stores them."""
    from heterps_core.costmodel import evaluate
    from heterps_core.instance import Instance

    instance = samples.ctr_instance().to_dict()
    for resource in instance["resources"]:
        if resource["name"] == "cpu-b":
            resource["market"] = {"spot_price": 0.45, "interruptions_per_hour": 2.0,
                                  "restart_s": 30.0}
    plan = evaluate(Instance.from_dict(instance), samples.DEFAULT).to_dict()
    assert [s["market"] for s in plan["stages"]] == ["on-demand", "spot"]
    project = personas.project
    model = apps.get_model("modelzoo", "RegisteredModel").objects.create(
        project=project, name="CTR tiny", zoo_name="ctr_dnn", size="tiny")
    cluster = apps.get_model("planning", "Cluster").objects.create(project=project, name="c")
    request = apps.get_model("planning", "PlanningRequest").objects.create(
        project=project, model=model, cluster=cluster, batch_size=samples.BATCH,
        throughput_target=100.0, instance=instance, schedulers=["exact"])
    return apps.get_model("planning", "PlanResult").objects.create(
        project=project, request=request, scheduler="exact", plan=plan, feasible=True,
        throughput=plan["throughput"], cost_per_hour=plan["cost_per_hour"])


def _drained(job: Job) -> int:
    """Run the job's current run here (the main thread holds the launcher's SIGTERM handler,
    as a Celery worker's does) and send this process SIGTERM once it trains; the step the
    spot notice stopped it at."""
    run = job.runs
    start = job.last_step

    def notice() -> None:
        wait_until(lambda: JobMetric.objects.filter(job_id=job.pk, run=run,
                                                    step__gte=start + 4).exists(),
                   180, f"run {run} training")
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=notice)
    sender.start()
    try:
        work_services.run_work(job.work_id)
    finally:
        sender.join(200)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED, job.work.error
    assert job.summary is not None, (job.work.error, job.log[-3000:])
    stopped = job.summary["preempted"]
    assert stopped["checkpoint_step"] == stopped["step"] > start
    return int(stopped["step"])


def _job(pk: int) -> Job:
    return Job.objects.select_related("work", "project").get(pk=pk)


def _page(login: Any, user: Any, job: Job) -> str:
    return str(login(user).get(f"/jobs/{job.pk}/").content.decode())


@pytest.mark.slow
def test_a_spot_stopped_job_resumes_by_itself_until_its_restarts_are_used(
    login: Any, personas: Any, spot_result: Any
) -> None:
    # One automatic restart: the second notice leaves it stopped, for a person.
    job = services.approve_plan(personas.member, spot_result, RunOptions(steps=STEPS),
                                max_restarts=1)
    first = _drained(job)

    # No capacity (its dense type bound to remote, and no agent can join an embedded
    # server): the sweep starts nothing and the page says what it waits for.
    Job.objects.filter(pk=job.pk).update(options={**job.options, "binding": {"cpu-b": "remote"}})
    assert sweeper.sweep().get("jobs waiting") == 1
    assert _job(job.pk).runs == 1
    assert "Resumes by itself once agents of cpu-b are connected: automatic restart 1 of 1" \
        in _page(login, personas.member, _job(job.pk))
    Job.objects.filter(pk=job.pk).update(options=job.options)

    # Capacity again: the background sweep (the jobs app's hook) resumes it from the notice's
    # checkpoint, as a new run through the jobs service.
    assert sweeper.sweep().get("jobs resumed") == 1
    job = _job(job.pk)
    assert job.runs == 2 and job.restarts == 1 and job.status == Status.QUEUED
    assert job.work.params == {"job": job.pk, "run": 2, "resume": {"run": 1, "step": first}}
    assert f"run 2 started automatically after the spot notice at step {first}: restart 1 of 1" \
        in job.log
    assert sweeper.sweep().get("jobs resumed") is None  # queued: nothing more to do

    second = _drained(job)
    assert second > first
    assert recovery.recover(job.pk) == "exhausted"
    assert sweeper.sweep().get("jobs resumed") is None and _job(job.pk).runs == 2
    page = _page(login, personas.member, _job(job.pk))
    assert (f"Spot notice at step {second}; 1 of 1 automatic restart used; Resume by hand"
            in page)
    assert f"Resume from step {second}</button>" in page

    # A viewer may not give it more restarts; a member may, and the sweep resumes it again.
    api = f"/api/jobs/{job.pk}/recovery/"
    assert login(personas.viewer).post(api, {"max_restarts": 2},
                                       content_type="application/json").status_code == 403
    assert login(personas.outsider).post(api, {"max_restarts": 2},
                                         content_type="application/json").status_code == 404
    assert _job(job.pk).max_restarts == 1
    answer = login(personas.member).post(api, {"max_restarts": 2},
                                         content_type="application/json")
    assert answer.status_code == 200 and answer.json()["max_restarts"] == 2
    assert answer.json()["restarts"] == 1
    assert sweeper.sweep().get("jobs resumed") == 1
    job = _job(job.pk)
    assert job.work.params["resume"] == {"run": 2, "step": second} and job.restarts == 2
    work_services.run_work(job.work_id)
    job = _job(job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    assert job.summary["start_step"] == second and job.summary["steps"] == STEPS
    assert sweeper.sweep().get("jobs resumed") is None  # finished: nothing to recover

    # Itemised from the runs' records: two notices, two resumed runs.
    items = interruptions.items(job)
    assert items is not None
    assert (items["preemptions"], items["restarts"], items["automatic_restarts"]) == (2, 2, 2)
    assert items["redone_steps"] == 0  # each drain checkpointed the step it stopped at
    assert items["restart_cost"] > 0 and items["restart_s"] > 0
    assert items["lost_to_preemption"] >= 0
    held = sum(f.held_s for f in interruptions.runs_of(job).values())
    accrued = sum(f.accrued for f in interruptions.runs_of(job).values())
    assert items["on_demand_per_hour"] == pytest.approx(0.5 + 1.5)  # cpu + cpu-b, on demand
    assert items["saved_by_spot"] == pytest.approx(2.0 * held / 3600 - accrued)
    assert items["saved_by_spot"] > 0
    row = next(r for r in costs.report(personas.member, costs.month(None)).rows
               if r.job_id == job.pk)
    assert (row.preemptions, row.restarts) == (2, 2)
    assert row.saved_by_spot == pytest.approx(items["saved_by_spot"])
    assert row.restart_cost == pytest.approx(items["restart_cost"])
    report = login(personas.member).get("/costs/").content.decode()
    assert '<span data-field="preemptions">2 / 2</span>' in report
    page = _page(login, personas.member, job)
    assert '<dd data-field="preemptions">2</dd>' in page
    assert '<dd data-field="automatic-restarts">2 of 2</dd>' in page


@pytest.mark.slow
def test_a_cancelled_or_failed_run_is_not_resumed_by_itself(
    personas: Any, source: Any, settings: Any
) -> None:
    settings.WORK_HEARTBEAT_S = 0.05  # a cancel reaches the run within a beat
    job = services.approve(personas.member, source, RunOptions(steps=600), max_restarts=3)

    def stopped_while_training(stop: Any) -> None:
        current = _job(job.pk)
        runner = threading.Thread(target=work_services.run_work, args=(current.work_id,))
        runner.start()
        try:
            wait_until(lambda: JobMetric.objects.filter(job_id=job.pk, run=current.runs,
                                                        step__gte=4).exists(),
                       180, "the run training")
            stop()
        finally:
            runner.join(60)
        assert not runner.is_alive()

    stopped_while_training(lambda: services.cancel(personas.member, _job(job.pk)))
    assert _job(job.pk).work.status == Status.CANCELLED
    assert recovery.recover(job.pk) == "" and sweeper.sweep().get("jobs resumed") is None
    assert _job(job.pk).runs == 1 and _job(job.pk).restarts == 0

    services.restart(personas.member, _job(job.pk))  # by hand
    stopped_while_training(leases.stop_local)  # the worker's server shuts down: failed
    failed = _job(job.pk)
    assert failed.work.status == Status.FAILED and "server shut down" in failed.work.error
    assert recovery.recover(job.pk) == "" and sweeper.sweep().get("jobs resumed") is None
    assert _job(job.pk).runs == 2 and _job(job.pk).restarts == 0
    assert recovery.status(_job(job.pk)) is None  # no spot notice: nothing said of recovery


@pytest.mark.slow
def test_a_budget_stop_is_not_resumed(personas: Any, source: Any) -> None:
    """A run its budget drained (the budget guard's stop: a preempted summary of `kind`
    "budget") is left for a person to raise the budget, even with restarts left."""
    budget = float(source.plan["cost_per_hour"]) * 12.0 / 3600  # 12 s of the plan's $/h
    job = services.approve(personas.member, source, RunOptions(steps=5000, budget=budget),
                           max_restarts=3)
    work_services.run_work(job.work_id)
    stopped = _job(job.pk)
    assert stopped.work.status == Status.FAILED, stopped.work.error
    assert stopped.summary["preempted"]["kind"] == "budget"
    assert recovery.spot_stop(stopped) is None and recovery.status(stopped) is None
    assert recovery.recover(job.pk) == "" and sweeper.sweep().get("jobs resumed") is None
    assert _job(job.pk).runs == 1 and _job(job.pk).restarts == 0
    assert interruptions.items(_job(job.pk)) is None  # on demand, and no spot notice


def test_the_default_is_three_restarts_with_a_spot_stage_and_none_without(
    personas: Any, source: Any, spot_result: Any
) -> None:
    on_spot = services.approve_plan(personas.member, spot_result, RunOptions(steps=8),
                                    start=False)
    on_demand = services.approve(personas.member, source, RunOptions(steps=8), start=False)
    assert (on_spot.max_restarts, on_demand.max_restarts) == (spot.SPOT_DEFAULT, 0)
    assert spot.SPOT_DEFAULT == 3


@pytest.mark.parametrize(("value", "words"), [
    (101, "Ensure this value is less than or equal to 100"),
    (-1, "Ensure this value is greater than or equal to 0"),
    ("many", "A valid integer is required"),
])
def test_the_api_refuses_restarts_out_of_bounds_naming_the_field(
    login: Any, personas: Any, spot_result: Any, value: Any, words: str
) -> None:
    body = {"plan_result": spot_result.pk, "steps": 8, "max_restarts": value}
    answer = login(personas.member).post("/api/jobs/", body, content_type="application/json")
    assert answer.status_code == 400 and "max_restarts" in answer.json(), answer.content
    job = services.approve_plan(personas.member, spot_result, RunOptions(steps=8), start=False)
    changed = login(personas.member).post(f"/api/jobs/{job.pk}/recovery/",
                                          {"max_restarts": value},
                                          content_type="application/json")
    assert changed.status_code == 400 and "max_restarts" in changed.json()
    with pytest.raises(Exception, match="max_restarts"):
        services.approve_plan(personas.member, spot_result, RunOptions(steps=8), start=False,
                              max_restarts=value)


def test_members_set_restarts_when_approving_and_viewers_cannot(
    login: Any, personas: Any, spot_result: Any
) -> None:
    body = {"plan_result": spot_result.pk, "steps": 8, "max_restarts": 5}
    answer = login(personas.member).post("/api/jobs/", body, content_type="application/json")
    assert answer.status_code == 201 and answer.json()["max_restarts"] == 5
    assert login(personas.viewer).post("/api/jobs/", body,
                                       content_type="application/json").status_code == 403
    form = {"runner": "pipeline", "steps": 8, "lr": 0.05, "max_restarts": 2,
            "sync_mode": "bsp", "bind_cpu": "cpu", "bind_cpu-b": "cpu"}
    page = login(personas.member).get(f"/jobs/approve/{spot_result.pk}/").content.decode()
    assert 'name="max_restarts" value="3"' in page  # the spot plan's default
    made = login(personas.member).post(f"/jobs/approve/{spot_result.pk}/", form)
    assert made.status_code == 302, made.context["form"].errors
    assert Job.objects.order_by("-pk").first().max_restarts == 2
    assert login(personas.viewer).post(f"/jobs/approve/{spot_result.pk}/",
                                       form).status_code == 403
    job = Job.objects.order_by("-pk").first()
    with pytest.raises(PermissionDenied):
        recovery.set_max_restarts(personas.viewer, job, 9)
    assert Job.objects.get(pk=job.pk).max_restarts == 2


def test_a_remote_type_has_capacity_only_while_an_agent_serves_it() -> None:
    # In the embedded server no agent can join: a remote type never has capacity there;
    # types bound to this machine always have it.
    assert recovery.missing_capacity(Job(options={"binding": {"cpu-b": "remote"}})) == ["cpu-b"]
    assert recovery.missing_capacity(Job(options={"binding": {"cpu-b": "cpu:1"}})) == []
    assert recovery.missing_capacity(Job(options={})) == []


def test_a_refused_resume_is_said_once_and_left_for_a_person(
    personas: Any, source: Any, login: Any, caplog: Any,
) -> None:
    """The approver was made a viewer after the spot notice: the sweep's resume is refused,
    which the job's log and page say once; later sweeps neither retry nor log again."""
    from webapp.background.models import Work
    from webapp.projects.models import Membership, Role

    job = services.approve(personas.member, source, RunOptions(steps=600), max_restarts=3,
                           start=False)
    work = Work.objects.create(project=personas.project, kind="job-run", status=Status.FAILED,
                               created_by=personas.member)
    stopped = {"step": 40, "checkpoint_step": 40, "reason": "SIGTERM", "kind": "spot"}
    Job.objects.filter(pk=job.pk).update(work=work, runs=1, summary={"preempted": stopped})
    Membership.objects.filter(project=personas.project, user=personas.member).update(
        role=Role.VIEWER)

    with caplog.at_level("WARNING", logger="webapp.jobs.recovery"):
        assert recovery.recover(job.pk) == "refused"
        assert recovery.recover(job.pk) == "refused"
        sweeper.sweep()
    assert len([r for r in caplog.records if "not resumed automatically" in r.message]) == 1
    refused = _job(job.pk)
    assert refused.runs == 1 and refused.restarts == 0
    assert refused.log.count("not resumed automatically after the spot notice at step 40") == 1
    said = recovery.status(refused)
    assert said is not None and not said["pending"]
    assert said["text"].startswith("spot notice at step 40; not resumed automatically: its "
                                   "approver may no longer start runs")
    assert said["text"].endswith("Resume by hand")
    assert "Resume by hand" in _page(login, personas.owner, refused)
