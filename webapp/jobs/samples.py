"""A small runnable plan: the tiny CTR-DNN (4 layers) priced by the real cost model.

Used by the benchmark (bench/web.py) and the tests to create jobs without a planning run;
the runtime can execute it on any machine (every stage on the local CPU).
"""

from __future__ import annotations

from typing import Any

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance

MODEL, SIZE, BATCH, LAYERS = "ctr_dnn", "tiny", 64, 4
DEFAULT = ["cpu", "cpu-b", "cpu-b", "cpu-b"]


def ctr_plan(assignment: list[str] | None = None) -> dict[str, Any]:
    """A feasible plan JSON; default: embedding on `cpu`, the dense layers on `cpu-b`."""
    assignment = assignment or DEFAULT
    plan = evaluate(ctr_instance(sorted(set(assignment))), assignment)
    if not plan.feasible:
        raise AssertionError(f"sample plan infeasible: {plan.reason}")
    return plan.to_dict()


def ctr_instance(names: list[str] | None = None) -> Instance:
    """The planning instance the sample plans are priced on (one CPU kind per name)."""
    names = names or sorted(set(DEFAULT))
    return Instance.from_dict({
        "version": 1, "batch_size": BATCH, "throughput_target": 100.0,
        "resources": [
            {"name": n, "kind": "cpu", "price_per_hour": 0.5 + i, "count": 4,
             "memory_gb": 64, "network_gbps": 100_000}  # the documented maximum
            for i, n in enumerate(names)
        ],
        "layers": [
            {"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
             "compute_s": {n: 0.05 for n in names}, "output_mb": 0.01, "sync_mb": 0.01,
             "memory_gb": 0.1, "shardable": i == 0}
            for i in range(LAYERS)
        ],
    })
