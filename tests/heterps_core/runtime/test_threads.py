"""Threads per process (runtime/threads.py): the rule, and a real run whose dense process
runs with the threads the rule gave it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement
from heterps_core.runtime.binding import Target, parse_binding, parse_target
from heterps_core.runtime.compile import compile_run
from heterps_core.runtime.datasource import AHEAD
from heterps_core.runtime.launcher import RunConfig, launch
from heterps_core.runtime.reference import train_plain
from heterps_core.runtime.spec import layout, stages_from_plan
from heterps_core.runtime.threads import (
    busy_shares,
    input_ahead,
    machine_cores,
    rank_threads,
    size_threads,
)


def test_the_busiest_process_takes_the_whole_cores_the_others_leave_idle() -> None:
    # embedding 0.2, dense 1.0, shard 0.1 busy: 1.3 cores used.
    assert size_threads([0.2, 1.0, 0.1], cores=3) == [1, 2, 1]  # 1.7 idle: one whole core
    assert size_threads([0.2, 1.0, 0.1], cores=8) == [1, 7, 1]
    # 0.7 idle is no whole core: a second thread would take turns with the others.
    assert size_threads([0.2, 1.0, 0.1], cores=2) == [1, 1, 1]
    assert size_threads([0.8, 1.0, 0.4], cores=2) == [1, 1, 1]
    assert size_threads([1.0], cores=1) == [1]
    # One busy stage process and an idle shard on 2 cores: the stage takes both.
    assert size_threads([1.0, 0.0], cores=2) == [2, 1]
    # Two equally busy processes split the idle cores.
    assert size_threads([1.0, 1.0, 0.0], cores=6) == [3, 3, 1]


def test_an_explicit_count_is_kept_and_holds_its_cores() -> None:
    # The dense process is pinned to 1; the idle cores go to the busiest one left.
    assert size_threads([0.4, 1.0, 0.1], cores=4, fixed=[0, 1, 0]) == [3, 1, 1]
    # A pinned process of 3 busy threads leaves nothing idle on 4 cores.
    assert size_threads([0.4, 1.0, 0.1], cores=4, fixed=[0, 3, 0]) == [1, 3, 1]


def _plan(embedding_s: float, dense_s: float, one_stage: bool = False) -> Plan:
    """Embedding layer on `cpu`, three dense layers on `cpu-b`, one unit each (or every
    layer on `cpu`)."""
    instance = Instance.from_dict({
        "version": 1, "batch_size": 64, "throughput_target": 100.0,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0, "count": 4,
                       "memory_gb": 64, "network_gbps": 100_000} for n in ("cpu", "cpu-b")],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {"cpu": t, "cpu-b": t}, "output_mb": 0.01, "sync_mb": 0.01,
                    "memory_gb": 0.1, "shardable": i == 0}
                   for i, t in enumerate([embedding_s] + [dense_s / 3] * 3)],
    })
    plan = evaluate(instance, ["cpu"] * 4 if one_stage else ["cpu", "cpu-b", "cpu-b", "cpu-b"])
    assert plan.feasible and {s.units for s in plan.stages} == {1}, plan
    return plan


def test_busy_shares_follow_the_sync_mode_and_the_server() -> None:
    plan = _plan(0.01, 0.04)
    stages, shard = busy_shares(plan, "async")  # the stages overlap: the slowest sets the pace
    assert stages == pytest.approx([0.25, 1.0]) and shard == 0.0
    stages, _ = busy_shares(plan, "bsp")  # they take turns
    assert stages == pytest.approx([0.2, 0.8])
    served = replace(plan, parameter_server=ServerPlacement("cpu", 1, 0.02, 1.0, 1.0, 0.1))
    assert busy_shares(served, "async")[1] == pytest.approx(0.5)


def test_only_this_machines_unpinned_cpu_processes_are_resized() -> None:
    plan = _plan(0.01, 0.04)
    stages = stages_from_plan(plan)
    # The pinned dense stage keeps 1; the embedding stage is the busiest left.
    pinned = layout(stages, {"cpu": Target("cpu"), "cpu-b": parse_target("cpu:1")}, 1)
    assert rank_threads(pinned, plan, "async", cores=4) == {0: 3, 1: 1, 2: 1}
    remote = layout(stages, {"cpu": Target("remote"), "cpu-b": Target("cpu")}, 1)
    assert rank_threads(remote, plan, "async", cores=4) == {1: 4, 2: 1}
    # A shard served inside the embedding process adds its work to that process's.
    served = replace(plan, parameter_server=ServerPlacement("cpu", 1, 0.02, 1.0, 1.0, 0.1))
    hosted = layout(stages, {"cpu": Target("cpu"), "cpu-b": Target("cpu")}, 1)
    hosted = (*hosted[:2], replace(hosted[2], host=0))
    assert rank_threads(hosted, served, "async", cores=4) == {0: 1, 1: 3}  # 0.75 + 1.0 busy


def test_input_is_made_ahead_only_on_a_core_the_threads_leave_idle() -> None:
    assert input_ahead({0: 1, 1: 1}, cores=4) == AHEAD  # pinned cpu:1 stages on a big machine
    assert input_ahead({0: 2, 1: 1}, cores=2) == 0  # 1 stage cpu:2 and its shard: all taken
    assert input_ahead({0: 1, 1: 1}, cores=2) == 0
    # The rule above gives the busiest process every whole idle core: nothing is left over.
    plan = _plan(0.01, 0.04)
    ranks = layout(stages_from_plan(plan), {"cpu": Target("cpu"), "cpu-b": Target("cpu")}, 1)
    assert input_ahead(rank_threads(ranks, plan, "async", cores=8), cores=8) == 0


def test_the_compiled_ranks_carry_the_ahead_their_stage_reads(jobs) -> None:
    plan = _plan(0.005, 0.09)
    spec = compile_run(RunConfig(plan=plan, train=jobs.settings(8)))
    sized = {r.rank: r.threads for r in spec.ranks if r.threads}
    assert {r.ahead for r in spec.ranks if r.threads} == {input_ahead(sized, machine_cores())}


@pytest.mark.skipif(machine_cores() < 2, reason="one core: nothing to give")
def test_a_real_run_gives_the_dense_process_the_threads_the_rule_sized(jobs) -> None:
    # bsp: the stages take turns, so together they keep one core busy; the other is idle.
    plan = _plan(0.005, 0.09)
    train = jobs.settings(8, micro_batches=2, sync="bsp")
    config = RunConfig(plan=plan, train=train)
    spec = compile_run(config)
    want = {r.rank: r.threads for r in spec.processes}
    assert want[1] > 1 and spec.ranks[1].target == "cpu"  # the binding stays as given
    result = launch(config)
    # More threads change no result: sync mode still equals the plain loop.
    torch.testing.assert_close(torch.tensor(result.losses),
                               torch.tensor(train_plain(train).losses), rtol=1e-5, atol=1e-5)
    # Every job process reports the threads it ran with (a shard served inside a stage's
    # process, runtime/ps_inprocess.py, is no process of its own and reports none).
    ran = {r: s["threads"] for r, s in result.process_stats.items() if "threads" in s}
    assert set(ran) >= {0, 1}
    assert ran == {r: want[r] for r in ran}
    # An explicit count stays the user's word.
    pinned = RunConfig(plan=plan, train=train, binding=parse_binding("cpu-b=cpu:1", ["cpu-b"]))
    assert launch(pinned).process_stats[1]["threads"] == 1
