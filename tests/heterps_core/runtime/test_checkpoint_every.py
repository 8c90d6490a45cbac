"""The checkpoint interval a run takes: the one a plan priced for its spot stages (issue 26),
unless the run asks for its own; plans without markets keep the final checkpoint only.
Real multi-process jobs (gloo on CPU, tiny CTR-DNN)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from heterps_core.plan import Plan
from heterps_core.runtime import checkpoint
from heterps_core.runtime.compile import compile_run
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.launcher import RunConfig, launch

STEPS = 7


def with_markets(plan: Plan, spot_every: object, spot_stage: int = 1) -> Plan:
    """`plan` as the planner writes it for an instance with markets: one stage on spot with
    the interval it priced, the others on demand (no interval)."""
    stages = tuple(
        replace(s, market="spot", checkpoint_every=spot_every) if i == spot_stage
        else replace(s, market="on-demand", checkpoint_every=None)
        for i, s in enumerate(plan.stages)
    )
    return replace(plan, stages=stages)


@pytest.mark.slow
def test_a_spot_stage_interval_checkpoints_the_run_at_that_interval(
    two_stage_plan: Plan, tmp_path: Path, jobs
) -> None:
    config = RunConfig(plan=with_markets(two_stage_plan, 3), train=jobs.settings(STEPS),
                       checkpoint_dir=str(tmp_path))
    assert compile_run(config).checkpoint_every == 3
    result = launch(config)
    # Every 3 steps, and the final one at the end of the run.
    assert result.sealed_steps == (3, 6, 7)
    assert result.checkpoint_step == 7
    # The directory keeps the newest two, each sealed with every part.
    assert checkpoint.complete_steps(str(tmp_path), compile_run(config).world_size) == [6, 7]


@pytest.mark.slow
def test_an_interval_asked_for_wins_over_the_plans(
    two_stage_plan: Plan, tmp_path: Path, jobs
) -> None:
    plan = with_markets(two_stage_plan, 3)
    result = launch(RunConfig(plan=plan, train=jobs.settings(STEPS), checkpoint_dir=str(tmp_path),
                              checkpoint_every=2))
    assert result.sealed_steps == (2, 4, 6, 7)


@pytest.mark.slow
def test_a_plan_without_markets_checkpoints_only_at_the_end(
    two_stage_plan: Plan, tmp_path: Path, jobs
) -> None:
    assert all(s.market is None for s in two_stage_plan.stages)
    config = RunConfig(plan=two_stage_plan, train=jobs.settings(STEPS),
                       checkpoint_dir=str(tmp_path))
    assert compile_run(config).checkpoint_every is None
    assert launch(config).sealed_steps == (7,)


def test_the_smallest_spot_interval_is_taken_in_whole_rounds(jobs, tmp_path: Path) -> None:
    # Stage 2 has two replicas: a checkpoint falls on whole rounds of 2 mini-batches.
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 2])
    two_spot = replace(plan, stages=(replace(plan.stages[0], market="spot", checkpoint_every=5),
                                     replace(plan.stages[1], market="spot", checkpoint_every=3)))
    config = RunConfig(plan=two_spot, train=jobs.settings(8), checkpoint_dir=str(tmp_path))
    assert compile_run(config).checkpoint_every == 4
    # Without somewhere to write there is nothing to checkpoint: no interval.
    assert compile_run(replace(config, checkpoint_dir=None)).checkpoint_every is None


@pytest.mark.parametrize("bad", [0, -3, 2.5, "3", True])
def test_a_bad_interval_in_the_plan_names_the_stage(
    two_stage_plan: Plan, tmp_path: Path, jobs, bad: object
) -> None:
    plan = with_markets(two_stage_plan, bad)
    config = RunConfig(plan=plan, train=jobs.settings(STEPS), checkpoint_dir=str(tmp_path))
    with pytest.raises(RunConfigError) as caught:
        compile_run(config)
    assert str(caught.value) == (
        f"plan.stages[1].checkpoint_every: must be a positive whole number of steps, got {bad!r}"
    )
