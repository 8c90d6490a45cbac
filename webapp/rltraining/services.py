"""RL training rules: start a run on a planning request's instance, train with heterps_core's
REINFORCE loop, keep the per-update curve and the best plan it found.

A run trains for `max_updates` policy updates, the work budget: the same run gives the same
curve on a quiet and on a busy server. `budget_s` is only an optional cap, in CPU seconds of
the training thread (heterps_core/budget.py), never wall time."""

from __future__ import annotations

import math
import time
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.rl.training import RLTrainConfig, train_on_instance
from webapp.background.services import start_work
from webapp.planning.models import PlanningRequest
from webapp.projects.permissions import Action, AnyUser, check
from webapp.rltraining.models import RLTrainingRun

KIND = "rl-train"
MAX_BUDGET_S = 600.0
MAX_UPDATES = 20_000
SAVE_EVERY_S = 0.5  # the curve is written to the database at most this often
REPORT_EVERY_S = 0.2  # progress events carry the rows since the last one


def start_training(
    user: AnyUser, request: PlanningRequest, budget_s: float | None = None,
    max_updates: int = 300, samples: int = 64, seed: int = 0,
) -> RLTrainingRun:
    check(user, request.project_id, Action.EDIT)
    if budget_s is not None and not (math.isfinite(budget_s) and 0 < budget_s <= MAX_BUDGET_S):
        raise ValidationError({"budget_s": f"must be between 0 and {MAX_BUDGET_S:g} CPU "
                                           "seconds (or empty: no cap)"})
    if not 1 <= max_updates <= MAX_UPDATES:
        raise ValidationError({"max_updates": f"must be between 1 and {MAX_UPDATES}"})
    if not 2 <= samples <= 1024:
        raise ValidationError({"samples": "must be between 2 and 1024 plans per update"})
    with transaction.atomic():
        run = RLTrainingRun.objects.create(
            project_id=request.project_id, request=request, budget_s=budget_s,
            max_updates=max_updates, samples=samples, seed=seed,
            created_by=user if user.is_authenticated else None,
        )
        run.work = start_work(user, request.project, KIND, {"run": run.pk})
        run.save(update_fields=["work"])
    return run


def train(run_id: int, progress: ProgressCallback = no_progress) -> dict[str, Any]:
    """Train; the curve is saved as it grows (so a reload shows it) and at the end."""
    run = RLTrainingRun.objects.select_related("request").get(pk=run_id)
    instance = Instance.from_dict(run.request.instance)
    config = RLTrainConfig(samples=run.samples, max_updates=run.max_updates,
                         budget_s=run.budget_s, patience=None)
    curve: list[dict[str, Any]] = []
    last_save, last_report, pending = [time.monotonic()], [0.0], [0]

    def on_update(p: Progress) -> None:
        curve.append(_row(p.metrics))
        pending[0] += 1
        now = time.monotonic()
        if now - last_report[0] >= REPORT_EVERY_S:
            last_report[0] = now
            rows = curve[-pending[0]:]
            pending[0] = 0
            progress(Progress(p.current, p.total, f"update {p.current}", {"rows": rows}))
        if now - last_save[0] >= SAVE_EVERY_S:
            last_save[0] = now
            RLTrainingRun.objects.filter(pk=run_id).update(curve=curve)

    training = train_on_instance(instance, config, seed=run.seed, progress=on_update)
    if pending[0]:  # the last updates since the previous event
        progress(Progress(training.updates, config.max_updates, f"update {training.updates}",
                          {"rows": curve[-pending[0]:]}))
    problem = training.problem
    best = None
    if problem.best is not None:
        assignment = [instance.resource_names[i] for i in problem.best]
        best = evaluate(instance, assignment, "rl").with_scheduler("rl", training.seconds)
    RLTrainingRun.objects.filter(pk=run_id).update(
        curve=curve, best_plan=best.to_dict() if best else None)
    return {"run": run_id, "updates": training.updates, "seconds": training.seconds,
            "cpu_s": training.cpu_s, "capped": training.capped,
            "best_cost_per_hour": best.cost_per_hour if best else None}


def _row(metrics: dict[str, Any]) -> dict[str, Any]:
    # NaN (no feasible plan yet) is not JSON: it becomes null.
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in metrics.items()}


def approvable_result(user: AnyUser, run: RLTrainingRun) -> Any:
    """The run's best plan as a result row of its planning request (scheduler
    "rl-train #N", gap to the exact optimum like every other row), so the jobs app's approve
    page, with its binding checks, approves it. Asking twice returns the same row."""
    from webapp.planning.models import PlanResult

    check(user, run.project_id, Action.EDIT)
    best = run.best_plan or {}
    if not best.get("feasible"):
        raise ValidationError({"plan": "this training run found no feasible plan to approve"})
    name = f"rl-train #{run.pk}"
    with transaction.atomic():
        existing = PlanResult.objects.filter(request=run.request, scheduler=name).first()
        if existing is not None:
            return existing
        exact = run.request.results.filter(scheduler="exact", feasible=True).first()
        gap = None
        if exact is not None and exact.cost_per_hour and best.get("cost_per_hour") is not None:
            gap = max(0.0, best["cost_per_hour"] / exact.cost_per_hour - 1.0)
        return PlanResult.objects.create(
            project_id=run.project_id, request=run.request, scheduler=name, plan=best,
            feasible=True, cost_per_hour=best.get("cost_per_hour"),
            throughput=best.get("throughput"), solve_time_s=best.get("solve_time_s"),
            gap_to_exact=gap,
        )
