"""Shared set-up of the runtime tests: small plans for the tiny CTR-DNN, process checks."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.runtime import template
from heterps_core.runtime.spec import TrainSettings

MODEL = "ctr_dnn"
SIZE = "tiny"
N_LAYERS = 4  # embedding, fc1, fc2, out
BATCH = 64
TARGET = 640.0  # with BATCH 64, a stage of compute 0.1*u - 0.01 s needs exactly u units


def plan_for(assignment: list[str], units: list[int]) -> Plan:
    """A plan from the real cost model whose stages get exactly `units` units each."""
    runs: list[list[int]] = []
    for i, res in enumerate(assignment):
        if i and res == assignment[i - 1]:
            runs[-1].append(i)
        else:
            runs.append([i])
    assert len(runs) == len(units)
    compute = [0.0] * len(assignment)
    for layers, u in zip(runs, units, strict=True):
        for i in layers:
            compute[i] = (0.1 * u - 0.01) / len(layers)
    names = sorted(set(assignment))
    instance = Instance.from_dict(
        {
            "version": 1,
            "batch_size": BATCH,
            "throughput_target": TARGET,
            "resources": [
                {
                    "name": n,
                    "kind": "cpu",
                    "price_per_hour": 0.5 + i,
                    "count": 8,
                    "memory_gb": 64,
                    "network_gbps": 100_000,  # the documented maximum
                }
                for i, n in enumerate(names)
            ],
            "layers": [
                {
                    "name": f"l{i}",
                    "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: compute[i] for n in names},
                    "output_mb": 0.01,
                    "sync_mb": 0.01,
                    "memory_gb": 0.1,
                    "shardable": i == 0,
                }
                for i in range(len(assignment))
            ],
        }
    )
    plan = evaluate(instance, assignment)
    assert plan.feasible and [s.units for s in plan.stages] == units, plan
    return plan


def settings(
    steps: int, micro_batches: int = 4, sync: str = "bsp", seed: int = 3, lr: float = 0.05
) -> TrainSettings:
    return TrainSettings(
        model=MODEL,
        size=SIZE,
        steps=steps,
        batch_size=BATCH,
        seed=seed,
        lr=lr,
        micro_batches=micro_batches,
        sync=sync,
    )


class Jobs:
    """The helpers above as one fixture (test modules cannot import conftest under importlib)."""

    plan_for = staticmethod(plan_for)
    settings = staticmethod(settings)
    live_processes_mentioning: Callable[[str], list[int]]  # the root conftest's, set below


def live_children() -> list[int]:
    """Pids of this process's children that are still running."""
    mine = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            mine.append(int(entry.name))
    return mine


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    """Every runtime test must end with none of its processes left behind."""
    # A web job run earlier in this process keeps a template warm for the next job
    # (template.keep_warm, by design): not this test's child. A template this test leaves
    # warm still fails it.
    template.discard()
    yield
    assert live_children() == []


@pytest.fixture(scope="session")
def jobs(live_processes: Callable[[str], list[int]]) -> type[Jobs]:
    Jobs.live_processes_mentioning = staticmethod(live_processes)
    return Jobs


@pytest.fixture
def two_stage_plan() -> Plan:
    return plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
