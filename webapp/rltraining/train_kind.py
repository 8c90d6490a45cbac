"""The `rl-train` work kind: train the RL policy on one planning request's instance."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from webapp.background.context import WorkContext
from webapp.background.kinds import WorkKind, reference, register
from webapp.rltraining import services
from webapp.rltraining.models import RLTrainingRun


@register
class RLTrainKind(WorkKind):
    name = services.KIND
    label = "Train the RL planning policy"
    references = {"run": RLTrainingRun}
    params_schema = {"type": "object", "required": ["run"],
                     "properties": {"run": reference("the RL training run to train")}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        run_id = params.get("run") if isinstance(params, dict) else None
        if not isinstance(run_id, int) or not RLTrainingRun.objects.filter(pk=run_id).exists():
            raise ValidationError({"run": "must name an existing RL training run"})
        return {"run": run_id}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        return services.train(ctx.params["run"], ctx.progress)
