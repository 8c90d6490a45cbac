"""Budgets enforced by the pipeline runner (issue 26.4): real runs of the tiny CTR-DNN whose
budget (the job's, then the project's) is below their cost. The runner drains each to a
complete checkpoint and stops it, the job page says why, the notice is mailed (the console
backend of the embedded default) and a restart is refused until the budget is raised."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from heterps_core.runtime import checkpoint
from heterps_core.runtime.compile import compile_run
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.budgets import services as budgets
from webapp.budgets.models import BudgetAlert
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.runners import pipeline
from webapp.jobs.services import RunOptions
from webapp.projects.services import set_budget

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

STEPS = 5000  # far more than a budget of seconds allows
RUN_S = 40.0  # the budget: this many seconds of the plan's $ per hour (past start-up)
# The guard counts 6.5 s from its request to the run's end (spend.AHEAD_S); on a loaded
# machine the drain's tail takes longer and may carry the run a little past (measured: 4% of
# a 20 s budget at load 6 on 2 cores).
TAIL_S = 10.0


@pytest.fixture
def addresses(personas: Any) -> None:
    for who in ("owner", "member"):
        user = getattr(personas, who)
        user.email = f"{who}@example.com"
        user.save()


@pytest.fixture
def console_mail(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"


def _seconds_of(source: Any, seconds: float) -> float:
    return float(source.plan["cost_per_hour"]) * seconds / 3600


def _asked_at(stopped: dict[str, Any]) -> float:
    """The dollars spent when the guard asked for the drain (its reason says)."""
    found = re.search(r"\(\$([0-9.]+) spent", stopped["reason"])
    assert found, stopped["reason"]
    return float(found.group(1))


def _stopped_at_a_checkpoint(job: Job) -> dict[str, Any]:
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED, job.work.error
    assert "preempted" in (job.summary or {}), (job.work.error, job.log[-3000:])
    stopped = job.summary["preempted"]
    assert stopped["kind"] == "budget"
    assert 0 < stopped["step"] < STEPS and stopped["checkpoint_step"] == stopped["step"]
    world = compile_run(pipeline.run_config(job)).world_size
    assert stopped["step"] in checkpoint.complete_steps(pipeline.checkpoint_dir(job, 1), world)
    return stopped


def test_a_job_over_its_budget_stops_at_a_checkpoint_with_the_reason_and_a_mail(
    login: Any, personas: Any, source: Any, addresses: None, console_mail: None, capsys: Any,
) -> None:
    budget = _seconds_of(source, RUN_S)
    job = services.approve(personas.member, source, RunOptions(steps=STEPS, budget=budget))
    assert job.budget == budget
    work_services.run_work(job.work_id)
    stopped = _stopped_at_a_checkpoint(job)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert stopped["reason"].startswith(f"budget: job budget ${budget:.2f} reached")
    assert _asked_at(stopped) < budget  # the drain was asked before the budget was passed
    assert 0 < job.accrued_cost <= budget + _seconds_of(source, TAIL_S)
    step = stopped["step"]
    assert f"run 1 stopped by its budget at step {step}, checkpoint complete (budget:" in job.log

    page = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert f"Stopped by its budget at step {step}, checkpoint complete" in page
    assert f"job budget ${budget:.2f} reached" in page
    assert "Stopped by a spot notice" not in page

    # One notice per threshold, the last one at the stop; mailed to the owner and creator.
    alerts = {a.threshold: a for a in BudgetAlert.objects.filter(job=job)}
    assert sorted(alerts) == [80, 100] and alerts[100].stopped
    printed = capsys.readouterr().out
    assert printed.count(f"Subject: HeterPS: job #{job.pk} reached 100% of its budget") == 1
    assert printed.count(f"Subject: HeterPS: job #{job.pk} reached 80% of its budget") == 1
    assert "To: member@example.com, owner@example.com" in printed

    # Spent: a restart (or the page's resume) is refused, naming the budget, until raised.
    with pytest.raises(ValidationError) as refused:
        services.restart(personas.member, job)
    assert "budget" in refused.value.message_dict
    assert "the job's budget" in refused.value.message_dict["budget"][0]
    followed = login(personas.member).post(f"/jobs/{job.pk}/restart/", follow=True)
    assert "budget: the job&#x27;s budget" in followed.content.decode()
    assert Job.objects.get(pk=job.pk).runs == 1
    budgets.set_job_budget(personas.member, job, budget * 10)
    job = services.restart(personas.member, Job.objects.get(pk=job.pk))
    assert job.runs == 2 and job.work.params["resume"] == {"run": 1, "step": step}


def test_a_project_over_its_budget_stops_its_job(
    personas: Any, source: Any, addresses: None,
) -> None:
    from django.core import mail

    earlier = services.approve(personas.member, source, RunOptions(steps=8), start=False)
    Job.objects.filter(pk=earlier.pk).update(accrued_cost=1.0)  # what earlier runs cost
    budget = 1.0 + _seconds_of(source, RUN_S)
    set_budget(personas.owner, personas.project, budget)
    job = services.approve(personas.member, source, RunOptions(steps=STEPS))
    assert job.budget is None  # no budget of its own: the project's holds it
    work_services.run_work(job.work_id)
    stopped = _stopped_at_a_checkpoint(job)
    assert stopped["reason"].startswith(f"budget: project budget ${budget:.2f} reached")
    assert _asked_at(stopped) < budget
    assert 1.0 + Job.objects.get(pk=job.pk).accrued_cost <= budget + _seconds_of(source, TAIL_S)
    alerts = BudgetAlert.objects.filter(project=personas.project, job=None)
    assert sorted(alerts.values_list("threshold", flat=True)) == [80, 100]
    assert {m.subject for m in mail.outbox} == {
        "HeterPS: the project reached 80% of its budget",
        "HeterPS: the project reached 100% of its budget"}
    # Neither job may start while the project's budget is spent.
    for spent in (job, earlier):
        with pytest.raises(ValidationError) as refused:
            services.start_run(personas.member, Job.objects.get(pk=spent.pk))
        assert "the project's budget" in refused.value.message_dict["budget"][0]


def test_a_data_parallel_job_over_its_budget_stops_with_the_reason(
    login: Any, personas: Any, source: Any,
) -> None:
    """A data-parallel run keeps no checkpoint: the guard stops it at once (real worker
    processes, wall-clock cost), recorded as the pipeline's budget stop is; a restart is
    refused until the budget is raised, and would start over."""
    from webapp.jobs.models import Runner

    budget = _seconds_of(source, RUN_S)
    job = services.approve(personas.member, source, RunOptions(
        steps=10_000_000, runner=Runner.DATAPARALLEL, sync_mode="asp", budget=budget,
        dataparallel={"workers": 2, "slowdowns": "1,1", "backend": "process"}))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.FAILED, job.work.error
    stopped = job.summary["preempted"]
    assert stopped["kind"] == "budget" and stopped["checkpoint_step"] is None
    assert stopped["reason"].startswith(f"budget: job budget ${budget:.2f} reached")
    assert 0 < stopped["step"] < 10_000_000
    assert _asked_at(stopped) < budget
    assert 0 < job.accrued_cost <= budget + _seconds_of(source, TAIL_S)
    step = stopped["step"]
    assert f"run 1 stopped by its budget at step {step}, no complete checkpoint" in job.log
    page = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert f"Stopped by its budget at step {step}, no complete checkpoint" in page
    assert "A restart starts from step 0." in page and "no longer complete" not in page
    with pytest.raises(ValidationError) as refused:
        services.restart(personas.member, job)
    assert "the job's budget" in refused.value.message_dict["budget"][0]
