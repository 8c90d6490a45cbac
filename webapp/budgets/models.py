"""A budget notice: a job or a project reached a share of its budget (once per threshold)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from webapp.jobs.models import Job
from webapp.projects.models import ProjectOwned

THRESHOLDS = (80, 100)  # percent of a budget at which its owners hear of it


class BudgetAlert(ProjectOwned):
    """`job` set: the job's own budget; None: the project's. Sent once per threshold: the
    constraints make a second notice of the same crossing (two runs, two workers) fail."""

    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE,
                            related_name="+")
    threshold = models.PositiveSmallIntegerField()  # percent: 80 or 100
    spent = models.FloatField()  # dollars accrued when it was reached
    budget = models.FloatField()  # dollars, the budget then
    stopped = models.BooleanField(default=False)  # the runner drained a run at this notice
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "threshold"], condition=Q(job__isnull=False),
                                    name="budget_alert_once_per_job"),
            models.UniqueConstraint(fields=["project", "threshold"],
                                    condition=Q(job__isnull=True),
                                    name="budget_alert_once_per_project"),
        ]

    def __str__(self) -> str:
        return self.text

    @property
    def scope(self) -> str:
        return f"job #{self.job_id}" if self.job_id else "the project"

    @property
    def text(self) -> str:
        """'job #3 reached 80% of its budget: $0.81 of $1.00 accrued'."""
        return f"{self.scope} {self.detail}"

    @property
    def detail(self) -> str:
        line = (f"reached {self.threshold}% of its budget: ${self.spent:.4f} of "
                f"${self.budget:.2f} accrued")
        return line + ("; a run was stopped at a checkpoint" if self.stopped else "")
