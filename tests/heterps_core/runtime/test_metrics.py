"""Worker reporters and the launcher's collector, through a real TCPStore."""

from __future__ import annotations

import pytest

from heterps_core.progress import Progress
from heterps_core.rendezvous import connect, serve
from heterps_core.runtime.launcher import Launcher, RunConfig
from heterps_core.runtime.metrics import Clock, Collector, MetricsSample, Reporter, progress_sink


class FakeTime:
    """A controllable clock for the collector's windows (the store and reporters are real)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_collector_windows_throughput_loss_stage_times_and_cost(jobs) -> None:
    spec = Launcher(
        RunConfig(
            plan=jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 2]), train=jobs.settings(8)
        )
    ).spec
    store = serve()
    worker_store = connect(f"127.0.0.1:{store.port}")
    clock = FakeTime()
    samples: list[MetricsSample] = []
    collector = Collector(store, spec, cost_per_hour=3.6, sink=samples.append, clock=clock)
    reporters = {rank: Reporter(worker_store, rank, Clock(), interval_s=1e9) for rank in (0, 1, 2)}
    for m, loss in enumerate([0.9, 0.7, 0.5, 0.3]):
        reporters[0].step_done(m, None)
        reporters[1 + m % 2].step_done(m, loss)  # stage 2 has two replicas: m mod 2
    for reporter in reporters.values():
        reporter.flush()
    clock.now += 2.0
    collector.poll()
    sample = collector.emit()
    assert sample.step == 4
    assert sample.samples_per_s == pytest.approx(4 * 64 / 2.0)
    assert sample.loss == pytest.approx(0.6)
    assert sample.cost == pytest.approx(3.6 * 2.0 / 3600)
    assert [(s.stage, s.resource, s.units) for s in sample.stages] == [
        (1, "cpu", 1),
        (2, "cpu-b", 2),
    ]
    assert all(s.busy_s + s.idle_s > 0 for s in sample.stages)
    assert collector.losses == {0: 0.9, 1: 0.7, 2: 0.5, 3: 0.3}
    clock.now += 1.0
    collector.poll()
    quiet = collector.emit(final=True)
    assert quiet.step == 4 and quiet.samples_per_s == 0 and quiet.loss is None and quiet.final
    assert samples == [sample, quiet]
    assert not store.check(["metrics/1/0"])  # chunks are consumed, the store does not grow


def test_clock_counts_idle_waits_apart_from_busy_time() -> None:
    clock = Clock()
    with clock.idle():
        sum(range(200_000))
    assert clock.idle_s > 0
    assert clock.busy_s >= 0


def test_progress_sink_speaks_the_projects_progress_interface() -> None:
    got: list[Progress] = []
    sample = MetricsSample(
        step=5,
        total_steps=10,
        elapsed_s=1.0,
        samples_per_s=1234.0,
        loss=0.5,
        stages=(),
        cost=0.001,
        cost_per_hour=3.6,
    )
    progress_sink(got.append)(sample)
    assert got[0].fraction == 0.5
    assert "1,234 samples/s" in got[0].message and got[0].metrics["loss"] == 0.5
