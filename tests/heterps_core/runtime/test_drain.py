"""Drains asked for in a run's first seconds, on real processes: every stage stops at one
common step, with a complete checkpoint that resumes exactly.

The launcher places the drain step from the stages' own progress (`progress/RANK`); the
metrics lag a report interval, and the speed they show in the first seconds can be far
below the run's (warm-up, a machine that stalls for a moment). A stage past the step it
is offered says so, and the launcher offers a later one: no stage ever stops alone.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from heterps_core import rendezvous as keys
from heterps_core.runtime import checkpoint
from heterps_core.runtime.drain import Drain
from heterps_core.runtime.errors import RunPreempted
from heterps_core.runtime.launcher import Launcher, RunConfig, launch
from heterps_core.runtime.stopping import StopPoint

STEPS = 20_000  # far more than any drain needs: the run must never end by itself


def drained(launcher: Launcher) -> RunPreempted:
    with pytest.raises(RunPreempted) as info:
        launcher.wait()
    return info.value


def assert_resumes_exactly(launcher: Launcher, folder: Path, step: int) -> None:
    """The drain's checkpoint is the only complete one, and resuming from it gives exactly
    the losses of the same run uninterrupted (bsp)."""
    assert checkpoint.complete_steps(folder, launcher.spec.world_size) == [step]
    config = replace(launcher.config, report_interval_s=0.5)
    train = replace(config.train, steps=step + 6)
    resumed = launch(replace(config, train=train, resume=True))
    assert resumed.start_step == step
    whole = launch(replace(config, train=train, checkpoint_dir=None))
    assert resumed.losses == whole.losses[step:]


def drain_late_in_a_report_window(launcher: Launcher, late_s: float) -> threading.Thread:
    """Ask for a drain `late_s` after the last stage's first metrics chunk reached the
    store (the speed is known by then: it holds every mini-batch finished in the first
    report interval): what the metrics say is `late_s` old."""
    last = launcher.spec.stage_ranks(len(launcher.spec.stages) - 1)[0]

    def ask() -> None:
        store = keys.connect(launcher.address)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if store.check([keys.metrics_count(last)]) and int(
                    store.get(keys.metrics_count(last))) >= 1:
                break
            time.sleep(0.002)
        time.sleep(late_s)
        launcher.request_drain("a drain late in a report window")

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_drain_asked_for_while_the_metrics_lag_stops_every_stage_at_one_step(
    jobs, tmp_path
) -> None:
    # Metrics every 6 s, the drain asked for 5 s after one arrived: the newest step they
    # show is 5 s old. Placed from it (3 s ahead), the drain step was passed before the
    # stages read it ("learnt the drain step N at step M, past it") and the run failed.
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    config = RunConfig(plan=plan, train=jobs.settings(STEPS, micro_batches=1),
                       checkpoint_dir=str(tmp_path), checkpoint_every=STEPS,
                       report_interval_s=6.0)
    launcher = Launcher(config)
    launcher.start()
    asking = drain_late_in_a_report_window(launcher, late_s=5.0)
    preempted = drained(launcher)
    asking.join(30)
    step = preempted.step
    assert 0 < step < STEPS and preempted.checkpoint_step == step
    assert "(a drain late in a report window)" in str(preempted)
    assert_resumes_exactly(launcher, tmp_path, step)


@pytest.mark.slow
@pytest.mark.parametrize("sync", ["bsp", "async"])
def test_a_drain_asked_for_before_the_first_mini_batch_stops_at_a_common_step(
    jobs, tmp_path, sync: str
) -> None:
    # Many tiny, fast steps, three stages (one with two replicas: rounds of 2 steps), the
    # drain asked for before any process trained: no metrics, no speed yet.
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-c", "cpu-c"], [1, 2, 1])
    train = jobs.settings(STEPS, micro_batches=1, sync=sync)
    config = RunConfig(plan=plan, train=train, checkpoint_dir=str(tmp_path),
                       checkpoint_every=STEPS, report_interval_s=0.5)
    launcher = Launcher(config)
    launcher.start()
    launcher.request_drain("at once")
    preempted = drained(launcher)
    step = preempted.step
    assert 0 < step < STEPS and step % launcher.spec.round_steps == 0
    assert preempted.checkpoint_step == step
    if sync == "bsp":
        assert_resumes_exactly(launcher, tmp_path, step)
    else:
        assert checkpoint.complete_steps(tmp_path, launcher.spec.world_size) == [step]


# --- the agreement itself, on a real store: offers, answers, the confirmation ---------------


def answer(store, point: StopPoint, rank: int) -> None:
    """One heartbeat of `rank`: hear the offer in the store, publish the answer."""
    offer = int(store.get(keys.STOP_AT)) if store.check([keys.STOP_AT]) else None
    store.set(keys.progress(rank), point.hear(offer).to_json())


def test_a_stage_past_the_offer_gets_a_later_one_and_none_stops_before_all_promised(
    jobs
) -> None:
    store = keys.serve()
    spec = Launcher(RunConfig(plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1]),
                              train=jobs.settings(600))).spec
    first, second = spec.stage_ranks(0)[0], spec.stage_ranks(1)[0]
    points = {first: StopPoint(), second: StopPoint()}
    drain = Drain(spec)
    drain.request("a spot notice")
    assert not points[first].stops_here(10, store)  # stage 1 started the round ending at 10
    answer(store, points[first], first)
    drain.poll(store, lambda: None)  # no speed yet: 4 rounds past the furthest started step
    assert drain.offer == 14 and int(store.get(keys.STOP_AT)) == 14
    for boundary in range(11, 15):  # stage 1 runs on before its heartbeat hears the offer
        assert not points[first].stops_here(boundary, store)
    assert not points[second].stops_here(9, store)
    answer(store, points[first], first)  # heard at 14: too late, it cannot stop there
    answer(store, points[second], second)  # heard at 9: it will stop at 14
    drain.poll(store, lambda: 6400.0)  # 100 steps/s: 3 s of them past step 14
    assert drain.offer == 314 and drain.stop_at is None
    assert not store.check([keys.STOP_AGREED])

    # Stage 2 reached the old offer first: it waits there, and runs on once a later one is
    # heard (its heartbeat promises it, having started 14 only).
    waited: list[bool] = []
    waiting = threading.Thread(target=lambda: waited.append(
        points[second].stops_here(14, store)))
    waiting.start()
    time.sleep(0.2)
    assert waiting.is_alive()
    answer(store, points[second], second)
    waiting.join(5)
    assert waited == [False]
    answer(store, points[first], first)
    drain.poll(store, lambda: 6400.0)
    assert drain.stop_at == 314 and int(store.get(keys.STOP_AGREED)) == 314
    assert [points[r].stops_here(314, store) for r in (first, second)] == [True, True]


def test_a_stage_that_ended_leaves_only_the_run_end_to_agree_on(jobs) -> None:
    store = keys.serve()
    spec = Launcher(RunConfig(plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1]),
                              train=jobs.settings(600))).spec
    drain = Drain(spec)
    drain.request("a spot notice")
    drain.poll(store, lambda: None, exited={spec.stage_ranks(1)[0]})
    assert drain.stop_at == 600 and int(store.get(keys.STOP_AGREED)) == 600
