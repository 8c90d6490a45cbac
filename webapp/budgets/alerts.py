"""Budget notices: a job or a project reaching 80% and 100% of its budget is announced once
per threshold, as a dashboard line (a `BudgetAlert` row) and an e-mail to the project's
owners and the job's creator, sent after the row's commit (a rolled-back notice mails no
one; Django's mail backend: the console in the embedded default, SMTP with EMAIL_HOST)."""

from __future__ import annotations

import logging
import smtplib
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q

from webapp.budgets.models import THRESHOLDS, BudgetAlert
from webapp.budgets.spend import JOB, PROJECT, Verdict
from webapp.projects.models import Role

logger = logging.getLogger(__name__)


class Notices:
    """One run's notices of one job: what it sent already is remembered, so a sample costs no
    query once a threshold is noted."""

    def __init__(self, project_id: int, job_id: int, creator_id: int | None) -> None:
        self.project_id, self.job_id, self.creator_id = project_id, job_id, creator_id
        self._noted: set[tuple[str, int]] = set()

    def note(self, verdict: Verdict, stopped: bool) -> None:
        """Every threshold the verdict's budgets reached; `stopped`: the guard is draining
        the run at the budget of `verdict.scope`, which counts as 100% reached."""
        for scope, standing in ((JOB, verdict.job), (PROJECT, verdict.project)):
            if not standing.budget:
                continue
            at_stop = stopped and verdict.scope == scope
            for threshold in THRESHOLDS:
                if (scope, threshold) in self._noted:
                    continue
                if at_stop or (standing.percent or 0.0) >= threshold:
                    self._noted.add((scope, threshold))
                    send_once(self.project_id, self.job_id if scope == JOB else None, threshold,
                              standing.spent, standing.budget, at_stop and threshold == 100,
                              self.creator_id)


def send_once(project_id: int, job_id: int | None, threshold: int, spent: float,
              budget: float, stopped: bool, creator_id: int | None) -> BudgetAlert | None:
    """The notice's row and, after its commit, its mail; None if it was sent already (by an
    earlier run, or another worker: the unique constraints decide)."""
    with transaction.atomic():
        whose: dict[str, Any] = {"job_id": job_id} if job_id else {"job__isnull": True}
        alert, created = BudgetAlert.objects.filter(**whose).get_or_create(
            project_id=project_id, threshold=threshold,
            defaults={"job_id": job_id, "spent": spent, "budget": budget, "stopped": stopped})
        if not created:
            return None
        transaction.on_commit(lambda: mail(alert, creator_id))
    return alert


def recipients(project_id: int, creator_id: int | None) -> list[str]:
    """The addresses of the project's owners and of the job's creator (those that have one)."""
    users = get_user_model().objects.filter(
        Q(memberships__project_id=project_id, memberships__role=Role.OWNER)
        | Q(pk=creator_id or 0)).exclude(email="")
    return sorted({user.email for user in users})


def mail(alert: BudgetAlert, creator_id: int | None) -> None:
    to = recipients(alert.project_id, creator_id)
    if not to:
        logger.info("budget notice %s: nobody to mail (no owner or creator has an address)",
                    alert.pk)
        return
    where = f"/jobs/{alert.job_id}/" if alert.job_id else f"/projects/{alert.project_id}/"
    subject = f"HeterPS: {alert.scope} reached {alert.threshold}% of its budget"
    body = (f"{alert.text[:1].upper()}{alert.text[1:]}.\n\n"
            + ("The runner drained the run to a checkpoint and stopped it; raise the budget "
               "to run it again.\n\n" if alert.stopped else "")
            + f"See {where} on the HeterPS server.\n")
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, to)
    except (OSError, smtplib.SMTPException) as exc:  # the dashboard line stays the record
        logger.warning("could not mail budget notice %s: %s", alert.pk, exc)
