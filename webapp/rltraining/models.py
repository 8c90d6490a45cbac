"""An RL training run of the HeterPS policy on one planning request's instance."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.background.models import Work
from webapp.planning.models import PlanningRequest
from webapp.projects.models import ProjectOwned


class RLTrainingRun(ProjectOwned):
    """`curve` holds one row per policy update: {update, mean_reward, best_cost, entropy};
    `best_plan` is the spec plan JSON of the best assignment sampled."""

    request = models.ForeignKey(PlanningRequest, on_delete=models.CASCADE,
                                related_name="rl_runs")
    work = models.OneToOneField(Work, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="rl_run")
    # The work is `max_updates`; `budget_s` is an optional cap in CPU seconds of the training
    # thread (heterps_core/budget.py), so a busy server does not change the curve.
    budget_s = models.FloatField(null=True, blank=True, default=None,
                                 help_text="optional cap, CPU seconds")
    max_updates = models.PositiveIntegerField(default=300, help_text="policy updates")
    samples = models.PositiveIntegerField(default=64, help_text="plans sampled per update")
    seed = models.IntegerField(default=0)
    curve = models.JSONField(default=list, blank=True)
    best_plan = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"RL training #{self.pk} on plan #{self.request_id}"
