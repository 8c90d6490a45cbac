"""The `plan` work kind: solve a planning request with each of its schedulers."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from webapp.background.context import WorkContext
from webapp.background.kinds import INTERACTIVE, WorkKind, reference, register
from webapp.planning import services
from webapp.planning.models import PlanningRequest


@register
class PlanKind(WorkKind):
    name = services.KIND
    label = "Plan with several schedulers and compare"
    queue = INTERACTIVE
    retryable = True
    references = {"request": PlanningRequest}
    params_schema = {"type": "object", "required": ["request"],
                     "properties": {"request": reference("the planning request to solve")}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        request_id = params.get("request") if isinstance(params, dict) else None
        if not isinstance(request_id, int) or not PlanningRequest.objects.filter(
            pk=request_id
        ).exists():
            raise ValidationError({"request": "must name an existing planning request"})
        return {"request": request_id}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        return services.solve_request(ctx.params["request"], ctx.progress)
