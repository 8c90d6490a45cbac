"""Plans for the tiny CTR-DNN built with the real cost model, and jobs approved from them."""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance

BATCH = 64


def ctr_plan(assignment: list[str]) -> dict[str, Any]:
    """A feasible one-unit-per-stage plan of the 4-layer tiny CTR-DNN."""
    names = sorted(set(assignment))
    instance = Instance.from_dict({
        "version": 1, "batch_size": BATCH, "throughput_target": 100.0,
        "resources": [
            {"name": n, "kind": "cpu", "price_per_hour": 0.5 + i, "count": 4,
             "memory_gb": 64, "network_gbps": 1e6}
            for i, n in enumerate(names)
        ],
        "layers": [
            {"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
             "compute_s": {n: 0.05 for n in names}, "output_mb": 0.01, "sync_mb": 0.01,
             "memory_gb": 0.1, "shardable": i == 0}
            for i in range(4)
        ],
    })
    plan = evaluate(instance, assignment)
    assert plan.feasible, plan
    return plan.to_dict()


@pytest.fixture
def two_stage_plan() -> dict[str, Any]:
    return ctr_plan(["cpu", "cpu-b", "cpu-b", "cpu-b"])


@pytest.fixture
def source(personas: Any, two_stage_plan: dict[str, Any]) -> Any:
    from webapp.jobs.services import PlanSource

    return PlanSource(project=personas.project, plan=two_stage_plan, model_name="ctr_dnn",
                      model_size="tiny", batch_size=BATCH, scheduler="exact")
