"""Input made ahead on a background thread (runtime/prefetch.py): the same stream, failures
that surface as the run's, no thread left behind; on real job processes where it matters."""

from __future__ import annotations

import gc
import itertools
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from heterps_core.runtime.datasource import AHEAD_ENV, replica_batches
from heterps_core.runtime.errors import RunError
from heterps_core.runtime.launcher import RunConfig, launch
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.prefetch import Prefetched

SAMPLE = Path(__file__).parents[2] / "data" / "criteo_sample.tsv"


def input_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "heterps-input"]


def gone_within(seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while input_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    return not input_threads()


@pytest.mark.parametrize("data", ["", f"criteo:{SAMPLE}"])
def test_a_replica_reads_the_same_batches_ahead_as_inline(jobs, data: str) -> None:
    train = replace(jobs.settings(6), data=data, batch_size=8)
    zoo = resolve_model(train.model)
    config = zoo.config(train.size)
    for start, step in [(0, 1), (1, 3)]:
        inline = replica_batches(train, zoo, config, start=start, step=step)
        ahead = replica_batches(train, zoo, config, start=start, step=step, ahead=2)
        pairs = itertools.islice(zip(inline, ahead, strict=True), 7)
        for (want, want_labels), (got, got_labels) in pairs:
            assert want.keys() == got.keys()
            assert all(torch.equal(want[key], got[key]) for key in want)
            assert torch.equal(want_labels, got_labels)
        ahead.close()  # type: ignore[attr-defined]
    assert not input_threads()


def test_no_thread_starts_before_the_first_batch_is_asked_for() -> None:
    stream = Prefetched(iter(range(10)), ahead=2, name="heterps-input")
    assert not stream.running and not input_threads()
    assert list(itertools.islice(stream, 4)) == [0, 1, 2, 3]
    assert stream.running
    stream.close()
    assert not stream.running and not input_threads()


def test_a_failure_of_the_source_is_raised_by_the_consumer_with_its_message() -> None:
    def source():
        yield from range(3)
        raise ValueError("line 7: label must be 0 or 1")

    stream = Prefetched(source(), ahead=2, name="heterps-input")
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="line 7: label must be 0 or 1"):
        next(stream)
    with pytest.raises(StopIteration):
        next(stream)
    assert gone_within(1.0)


def test_an_endless_stream_dropped_mid_way_stops_its_thread() -> None:
    stream = Prefetched(itertools.count(), ahead=2, name="heterps-input")
    assert next(stream) == 0 and next(stream) == 1  # the thread now waits on a full queue
    del stream
    gc.collect()
    assert gone_within(1.0)


def test_a_finite_stream_ends_after_its_last_item() -> None:
    assert list(Prefetched(iter("abc"), ahead=1, name="heterps-input")) == ["a", "b", "c"]
    assert gone_within(1.0)


@pytest.mark.slow
def test_a_run_reads_ahead_and_inline_to_the_same_losses(jobs, monkeypatch) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    config = RunConfig(plan=plan, train=jobs.settings(12), report_interval_s=0.2)
    monkeypatch.setenv(AHEAD_ENV, "0")
    inline = launch(config).losses
    monkeypatch.setenv(AHEAD_ENV, "3")
    ahead = launch(config).losses
    assert len(inline) == 12 and ahead == inline  # bit for bit: the same batches in order


@pytest.mark.slow
def test_a_bad_line_met_ahead_fails_the_run_naming_it(jobs, tmp_path: Path, monkeypatch) -> None:
    # The check before the start reads the first mini-batch only; line 40 is met mid-run,
    # on the input thread of stage 1, and must end the run with its own words.
    lines = SAMPLE.read_text().splitlines()[:60]
    lines[39] = "2" + lines[39][1:]
    data = tmp_path / "bad_mid.tsv"
    data.write_text("\n".join(lines) + "\n")
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    train = replace(jobs.settings(20), data=f"criteo:{data}", batch_size=8)
    monkeypatch.setenv(AHEAD_ENV, "2")  # on a machine whose cores the job holds it reads inline
    with pytest.raises(RunError, match=r"bad_mid.tsv:40: label must be 0 or 1"):
        launch(RunConfig(plan=plan, train=train, report_interval_s=0.2))
