"""`bayes`: Bayesian optimisation with optuna's TPE sampler, one categorical per layer.

Seeded (`TPESampler(seed=...)`), so a given seed gives the same plan. The single-resource
plans are enqueued as the first trials, as a practitioner would warm-start it. The
objective is the plan cost plus a large penalty per unit of infeasibility. `budget_s` counts
CPU seconds (heterps_core/budget.py), checked after each trial: optuna's own `timeout` is wall
time, so it is not used.
"""

from __future__ import annotations

import logging

from heterps_core.budget import Deadline, passed
from heterps_core.costmodels.common import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register
from heterps_core.schedulers.scoring import AssignmentScorer, Score, better

TRIALS = 150


@register
class BayesScheduler(Scheduler):
    name = "bayes"
    summary = f"Bayesian optimisation (optuna TPE), {TRIALS} trials (option trials=N); seeded."
    stochastic = True

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        import optuna

        optuna.logging.set_verbosity(logging.WARNING)
        trials = int(self.options.get("trials") or TRIALS)  # type: ignore[call-overload]
        scorer = AssignmentScorer(instance)
        names = instance.resource_names
        keys = [f"l{i}" for i in range(len(instance.layers))]
        best: list[str] | None = None
        best_score: Score | None = None

        def objective(trial: optuna.Trial) -> float:
            nonlocal best, best_score
            assignment = [trial.suggest_categorical(k, names) for k in keys]
            score = scorer.score(assignment)
            if better(score, best_score):
                best, best_score = assignment, score
            progress(Progress(trial.number + 1, trials, "trial"))
            return score.value()

        study = optuna.create_study(
            direction="minimize", sampler=optuna.samplers.TPESampler(seed=self.seed)
        )
        for res in names[: max(0, trials)]:
            study.enqueue_trial(dict.fromkeys(keys, res))
        deadline = Deadline.after(self.budget_s)

        def stop_when_spent(study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
            if passed(deadline):
                study.stop()

        study.optimize(objective, n_trials=trials, callbacks=[stop_when_spent])
        assert best is not None and best_score is not None
        plan = scorer.plan(best, self.name)
        if not best_score.feasible:
            return infeasible_plan(
                self.name, f"no trial found a feasible plan; the closest fails: {plan.reason}", best
            )
        return plan
