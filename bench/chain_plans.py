"""v1 plans of a zoo model's layer chain on one-unit CPU stages: the embedding layer on the
first stage, every other layer on the last. The benchmarks that time the runtime (not the
planner) run these; prices and layer times do not matter, only the assignment runs."""

from __future__ import annotations

from pathlib import Path

import torch

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.runtime.models import resolve_model

NAMES = ("cpu", "cpu-b")  # the stages' resource types, in order


def chain_plan(model: str, size: str, stages: int, batch_size: int) -> Plan:
    """1 stage (every layer on `cpu`) or 2 (embedding on `cpu`, the rest on `cpu-b`)."""
    zoo = resolve_model(model)
    with torch.device("meta"):
        layers = len(zoo.build(zoo.config(size), seed=0).layers)
    names = list(NAMES[:stages])
    instance = Instance.from_dict({
        "version": 1, "batch_size": batch_size, "throughput_target": 100,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0, "count": 2,
                       "memory_gb": 8, "network_gbps": 10} for n in names],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: 0.01 for n in names}, "output_mb": 0.01,
                    "sync_mb": 0.0, "memory_gb": 0.1, "shardable": i == 0}
                   for i in range(layers)],
    })
    plan = evaluate(instance, [names[0]] + [names[-1]] * (layers - 1))
    assert plan.feasible and [s.units for s in plan.stages] == [1] * stages, plan.reason
    return plan


def write_chain_plan(model: str, size: str, stages: int, batch_size: int, path: Path) -> Path:
    path.write_text(chain_plan(model, size, stages, batch_size).to_json())
    return path
