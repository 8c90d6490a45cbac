from __future__ import annotations

import pytest

from heterps_core.costmodel import infeasible_plan
from heterps_core.runtime.binding import Target
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.spec import JobSpec, backend_for, layout, stages_from_plan


def test_layout_has_one_process_per_unit_then_the_ps_shards(jobs) -> None:
    stages = stages_from_plan(jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 3]))
    ranks = layout(stages, {"cpu": Target("cpu", threads=2), "cpu-b": Target("cpu")}, 2)
    assert [(r.role, r.stage, r.replica, r.target) for r in ranks] == [
        ("stage", 0, 0, "cpu:2"),
        ("stage", 0, 1, "cpu:2"),
        ("stage", 1, 0, "cpu"),
        ("stage", 1, 1, "cpu"),
        ("stage", 1, 2, "cpu"),
        ("ps", -1, 0, "cpu"),
        ("ps", -1, 1, "cpu"),
    ]
    assert ranks[3].describe() == "stage 2 replica 1 (rank 3)"
    assert backend_for(ranks) == "gloo"
    assert backend_for(layout(stages, {"cpu": Target("cuda"), "cpu-b": Target("cpu")}, 1)) == (
        "cpu:gloo,cuda:nccl"
    )


def test_mini_batch_m_goes_to_replica_m_mod_k_and_specs_survive_json(jobs) -> None:
    stages = stages_from_plan(jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [2, 3]))
    spec = JobSpec(
        train=jobs.settings(12),
        stages=stages,
        ranks=layout(stages, {"cpu": Target("cpu"), "cpu-b": Target("cpu")}, 1),
        ps_shards=1,
    )
    assert [spec.replica_rank(1, m) for m in range(6)] == [2, 3, 4, 2, 3, 4]
    assert [spec.replica_rank(0, m) for m in range(4)] == [0, 1, 0, 1]
    assert spec.round_steps == 6
    assert JobSpec.from_json(spec.to_json()) == spec


def test_infeasible_plans_cannot_run() -> None:
    with pytest.raises(RunConfigError, match="plan: is not feasible \\(layer x cannot run"):
        stages_from_plan(infeasible_plan("exact", "layer x cannot run on gpu"))
