"""The acceptance checks: every mode trains with a straggler; staleness and bytes are honest."""

from __future__ import annotations

import json
import math

import pytest

from heterps_core.dataparallel import modes
from heterps_core.dataparallel.compression import INDEX_BYTES, VALUE_BYTES
from heterps_core.dataparallel.events import (
    CommitEvent,
    EvalEvent,
    PhaseEvent,
    ProfileEvent,
    StepEvent,
)

from .conftest import SSP_BOUND, TOPK_RATIO, Recorded, numel, run_mode

ALL_MODES = ["bsp", "asp", "ssp", "local_sgd", "adsp", "ashl"]
# The shared runs (every mode on tiny CTR-DNN) take about 10 s of CPU in all.
pytestmark = pytest.mark.slow


def test_every_mode_is_registered() -> None:
    assert modes.names() == ALL_MODES


@pytest.mark.parametrize("name", ALL_MODES)
def test_held_out_loss_decreases(runs: dict[str, Recorded], name: str) -> None:
    evals = runs[name].of(EvalEvent)
    assert evals[0].time_s == 0.0
    assert evals[-1].loss < 0.97 * evals[0].loss
    assert evals[-1].auc is not None and evals[-1].auc > evals[0].auc + 0.1


@pytest.mark.parametrize("name", ALL_MODES)
def test_training_loss_decreases(runs: dict[str, Recorded], name: str) -> None:
    losses = [e.loss for e in runs[name].of(StepEvent)]
    assert sum(losses[-60:]) / 60 < sum(losses[:60]) / 60


@pytest.mark.parametrize("name", ALL_MODES)
def test_every_worker_trains_and_the_slow_one_is_slower(
    runs: dict[str, Recorded], name: str
) -> None:
    workers = runs[name].result.workers
    assert all(w.steps > 0 and w.commits > 0 for w in workers)
    assert workers[2].mean_step_time_s > 3 * workers[0].mean_step_time_s
    assert sum(w.steps for w in workers) == runs[name].result.global_steps == 450


def test_ssp_never_exceeds_its_staleness_bound(runs: dict[str, Recorded]) -> None:
    ssp = runs["ssp"]
    recorded = [e.staleness for e in ssp.of(StepEvent)] + [e.staleness for e in ssp.of(CommitEvent)]
    assert max(recorded) <= SSP_BOUND
    # The bound is reached and binds: fast workers wait for the straggler...
    assert max(recorded) == SSP_BOUND
    assert ssp.result.workers[0].wait_s > 0
    # ...while without a bound the same workers run far ahead.
    assert max(e.staleness for e in runs["asp"].of(StepEvent)) > 5 * SSP_BOUND


def test_synchronous_modes_have_no_staleness_and_wait(runs: dict[str, Recorded]) -> None:
    for name in ("bsp", "local_sgd"):
        assert {e.staleness for e in runs[name].of(StepEvent)} == {0}
        # Every worker commits in every all-reduce, so all commit equally often.
        assert len({w.commits for w in runs[name].result.workers}) == 1
        assert runs[name].result.workers[0].wait_s > 0


def test_asynchronous_modes_never_wait(runs: dict[str, Recorded]) -> None:
    for name in ("asp", "adsp"):
        assert all(w.wait_s == 0 for w in runs[name].result.workers)


def test_adsp_workers_commit_about_equally_often(runs: dict[str, Recorded]) -> None:
    commits = [w.commits for w in runs["adsp"].result.workers]
    steps = [w.steps for w in runs["adsp"].result.workers]
    assert max(commits) <= 1.5 * min(commits)
    assert steps[0] > 2.5 * steps[2]  # fast workers do more local steps per commit


def test_ashl_switches_and_records_when(runs: dict[str, Recorded]) -> None:
    ashl = runs["ashl"]
    [switch] = ashl.of(PhaseEvent)
    assert (switch.previous, switch.phase, switch.reason) == ("AHL", "SHL", "threshold")
    assert ashl.result.switch == switch
    phases = [e.phase for e in ashl.of(StepEvent)]
    assert phases[0] == "AHL" and phases[-1] == "SHL"
    assert 0 < switch.time_s < ashl.result.time_s


def test_ashl_shl_staleness_is_bounded_by_three(runs: dict[str, Recorded]) -> None:
    shl = [e for e in runs["ashl"].of(CommitEvent) if e.phase == "SHL"]
    assert shl and max(e.staleness for e in shl) <= 3


def test_topk_sends_the_expected_fraction_of_bytes(runs: dict[str, Recorded]) -> None:
    ashl = runs["ashl"]
    entries = numel()
    dense_bytes = entries * VALUE_BYTES
    k = math.ceil(TOPK_RATIO * entries)
    commits = ashl.of(CommitEvent)
    # Rounds planned in SHL send k values and k indices; AHL rounds at most the dense model.
    compressed = [e.bytes_sent for e in commits if e.compressed]
    assert len(compressed) > 20
    assert set(compressed) == {k * (VALUE_BYTES + INDEX_BYTES)}
    assert compressed[0] / dense_bytes == pytest.approx(2 * TOPK_RATIO, rel=1e-3)
    assert all(e.phase == "SHL" for e in commits if e.compressed)
    assert all(0 < e.bytes_sent <= dense_bytes for e in commits if not e.compressed)
    # The per-worker byte counters add up to exactly what the commits carried.
    assert ashl.result.bytes_sent == sum(e.bytes_sent for e in commits)


def test_bsp_bytes_are_ring_all_reduce(runs: dict[str, Recorded]) -> None:
    bsp = runs["bsp"]
    ring = int(2 * (3 - 1) / 3 * numel() * VALUE_BYTES)
    assert all(w.bytes_sent == w.commits * ring for w in bsp.result.workers)


def test_profile_comes_first_and_sets_the_slowdowns(runs: dict[str, Recorded]) -> None:
    first = runs["bsp"].events[0]
    assert isinstance(first, ProfileEvent)
    base = first.workers[0].compute_s
    assert [p.compute_s / base for p in first.workers] == pytest.approx([1.0, 1.0, 4.0])
    assert all(p.measured_s > 0 and p.comm_s > 0 for p in first.workers)


def test_cancel_hook_stops_the_run() -> None:
    calls = 0

    def cancel() -> bool:
        nonlocal calls
        calls += 1
        return calls > 40

    result = run_mode("asp", cancel=cancel).result
    assert result.stopped == "cancelled"
    assert 0 < result.global_steps < 40


def test_stop_at_target_reports_time_to_target() -> None:
    recorded = run_mode("bsp", target_loss=0.66, stop_at_target=True, max_steps=3000)
    result = recorded.result
    assert result.stopped == "target"
    assert result.final.loss <= 0.66
    assert result.time_to_loss(0.66) == result.final.time_s
    stored = json.loads(json.dumps(result.to_dict()))  # JSON as it is, to store with the job
    assert stored["time_to_target_s"] == result.final.time_s
    assert [w["mean_step_time_s"] for w in stored["workers"]] == [
        w.mean_step_time_s for w in result.workers
    ]
    assert stored["profile"][2]["slowdown"] == 4.0


def test_progress_adapter_reports_each_evaluation(runs: dict[str, Recorded]) -> None:
    from heterps_core.dataparallel.events import progress_metrics
    from heterps_core.progress import Progress

    seen: list[Progress] = []
    forward = progress_metrics(seen.append, total_steps=450)
    for event in runs["ssp"].events:
        forward(event)
    evals = runs["ssp"].of(EvalEvent)
    assert [p.current for p in seen] == [e.global_step for e in evals]
    assert seen[-1].metrics["loss"] == evals[-1].loss and "held-out loss" in seen[-1].message
