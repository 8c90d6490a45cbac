"""Budget notices at 80% and 100%: each sent once per job and per project (a second run, a
second guard, the same crossing again), as a dashboard line and a mail to the owners and
the job's creator; the dashboard and the project page show them to every member."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from webapp.budgets.guard import Guard
from webapp.budgets.models import BudgetAlert
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions
from webapp.projects.services import set_budget

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def addresses(personas: Any) -> None:
    for who in ("owner", "member", "viewer"):
        user = getattr(personas, who)
        user.email = f"{who}@example.com"
        user.save()


def _sample(job: Job, cost: float) -> None:
    """A run's sample as the runner stores it: the job's total, then the guard."""
    Job.objects.filter(pk=job.pk).update(accrued_cost=cost)
    Guard(job, run=1).sample({"cost": cost, "cost_per_hour": 0.0})


def test_the_80_percent_notice_is_sent_once(personas: Any, source: Any, addresses: None,
                                            login: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8, budget=10.0),
                           start=False)
    _sample(job, 7.9)
    assert not BudgetAlert.objects.exists() and mail.outbox == []
    for cost in (8.0, 8.5, 9.0):  # three samples past 80%, each seen by a fresh guard
        _sample(job, cost)
    alert = BudgetAlert.objects.get()
    assert (alert.job_id, alert.threshold, alert.spent, alert.budget) == (job.pk, 80, 8.0, 10.0)
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.subject == f"HeterPS: job #{job.pk} reached 80% of its budget"
    assert sent.to == ["member@example.com", "owner@example.com"]  # not the viewer
    assert "$8.0000 of $10.00 accrued" in sent.body

    # A line on the dashboard and the project page, for every member (a viewer too).
    for page in ("/", f"/projects/{personas.project.pk}/"):
        shown = login(personas.viewer).get(page).content.decode()
        assert f"Job #{job.pk}</a> reached 80% of its budget" in shown, page
    assert "reached 80%" not in login(personas.outsider).get("/").content.decode()


def test_the_project_notices_come_once_whichever_job_crosses(
    personas: Any, source: Any, addresses: None
) -> None:
    set_budget(personas.owner, personas.project, 10.0)
    first, second = (services.approve(personas.member, source, RunOptions(steps=8),
                                      start=False) for _ in range(2))
    _sample(first, 5.0)
    _sample(second, 3.5)  # 8.5 of 10 in all
    _sample(first, 5.5)  # 9.0
    alert = BudgetAlert.objects.get()
    assert (alert.job_id, alert.threshold) == (None, 80)
    assert [m.subject for m in mail.outbox] == ["HeterPS: the project reached 80% of its budget"]
    _sample(second, 5.0)  # 10.5: past the budget
    assert sorted(BudgetAlert.objects.values_list("threshold", flat=True)) == [80, 100]
    assert len(mail.outbox) == 2
