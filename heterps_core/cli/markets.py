"""The text lines that say which market each stage of a plan runs on (instances with spot
markets only; the JSON has the same in `market`, `checkpoint_every`,
`expected_interruptions`)."""

from __future__ import annotations

from heterps_core.plan import Plan


def market_lines(plan: Plan) -> list[str]:
    if not plan.feasible or not any(s.market for s in plan.stages):
        return []
    lines = []
    for i, stage in enumerate(plan.stages, 1):
        if stage.market == "spot":
            lines.append(f"stage {i}: spot, checkpoint every {stage.checkpoint_every:,} steps")
        else:
            lines.append(f"stage {i}: on-demand")
    if plan.expected_interruptions is not None:
        lines.append(f"expected spot interruptions over the job: "
                     f"{plan.expected_interruptions:,.1f} (cost and total are expected figures)")
    return lines
