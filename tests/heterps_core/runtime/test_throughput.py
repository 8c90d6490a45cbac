"""The one definition of measured throughput: samples of the mini-batches finished after
the first, over the span from the first finished mini-batch to the last."""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core import provenance
from heterps_core.plan import Plan, Stage
from heterps_core.provenance import ResourceProvenance, Tier, from_plan_json
from heterps_core.runtime.result import RunResult
from heterps_core.runtime.throughput import (
    ThroughputMeter,
    is_substitute,
    run_summary,
    run_throughput,
)


def test_equal_batches_start_up_apart() -> None:
    run = run_throughput([10.0, 10.5, 11.0, 12.0], batch_size=100, started_at=4.0)
    assert (run.samples, run.span_s, run.startup_s, run.batches) == (300, 2.0, 6.0, 4)
    assert run.per_s == pytest.approx(150.0)


def test_batches_of_different_sizes_in_any_order() -> None:
    # Data-parallel workers finish out of order and may carry rebalanced batches.
    meter = ThroughputMeter(started_at=0.0)
    for t, size in [(3.0, 40), (1.0, 64), (2.0, 32), (5.0, 64)]:
        meter.add(t, size)
    run = meter.result()
    assert run.samples == 40 + 32 + 64  # all but the first to finish (64 at t=1)
    assert run.span_s == pytest.approx(4.0) and run.startup_s == pytest.approx(1.0)
    assert run.per_s == pytest.approx(136 / 4.0)


def test_fewer_than_two_batches_have_no_throughput() -> None:
    assert run_throughput([], 10).per_s is None
    one = run_throughput([2.0], 10, started_at=1.0)
    assert one.per_s is None and one.startup_s == pytest.approx(1.0) and one.batches == 1


HERE = "box#0123456789ab"
OTHER = "other#ba9876543210"


def _record(tier: Tier, device: str, host: str = HERE, **more: Any) -> ResourceProvenance:
    return ResourceProvenance(tier, device, host=host, **more)


@pytest.mark.parametrize(("record", "target", "ran_on", "substitute"), [
    # measured on the machine and device the stage ran on: like with like
    (_record(Tier.HERE, "cpu (1 threads, Xeon)"), "cpu", HERE, False),
    (_record(Tier.HERE, "cpu (4 threads, this machine)"), "cpu:4", HERE, False),
    (_record(Tier.AGENT, "celery@box: cpu (1 threads, Xeon)"), "remote", HERE, False),
    (_record(Tier.AGENT, "w1: cuda:0 (NVIDIA T4)"), "remote:cuda", HERE, False),
    (_record(Tier.RUN, "cpu (measured in job 3, run 1)"), "cpu", HERE, False),
    (_record(Tier.HERE, "cpu (1 threads, Xeon)", counts=(("measured-agent", 3),
                                                         ("measured-here", 2))), "cpu", HERE,
     False),
    # another machine, another device, or a machine not recorded on either side
    (_record(Tier.HERE, "cpu (1 threads, Xeon)"), "cpu", OTHER, True),
    (_record(Tier.HERE, "cpu (1 threads, Xeon)"), "cuda:0", HERE, True),
    (_record(Tier.AGENT, "w1: cuda:0 (NVIDIA T4)"), "remote", HERE, True),
    (_record(Tier.HERE, "cpu (1 threads, Xeon)"), "cpu", "", True),
    (_record(Tier.HERE, "cpu (1 threads, Xeon)", host=""), "cpu", HERE, True),
    # a host name is not a device: 'cpu-node1: cuda:0' is a GPU
    (_record(Tier.AGENT, "cpu-node1: cuda:0 (NVIDIA T4)"), "cpu", HERE, True),
    # estimated (a catalogue type under any name), given, mixed with estimates, unknown
    (_record(Tier.ESTIMATED, "roofline for c6i", band=0.25), "cpu", HERE, True),
    (_record(Tier.GIVEN, "import"), "cpu", HERE, True),
    (_record(Tier.ESTIMATED, "cpu (1 threads, Xeon)", counts=(("estimated", 2),
                                                              ("measured-run", 2))), "cpu",
     HERE, True),
    (ResourceProvenance(Tier.UNKNOWN), "cpu", HERE, True),
    (None, "cpu", HERE, True),
])
def test_what_counts_as_a_substitute(record: ResourceProvenance | None, target: str,
                                     ran_on: str, substitute: bool) -> None:
    assert is_substitute(record, target, ran_on) is substitute


def _result(stages: list[str], binding: dict[str, str], hosts: dict[int, str]) -> RunResult:
    plan = Plan("exact", True, tuple(stages), tuple(
        Stage((i,), name, 1, 0.01, 6400.0) for i, name in enumerate(stages)), 6400.0, 1.0)
    return RunResult(plan=plan, binding=binding, start_step=0, steps=4,
                     losses=[1.0, 0.9, 0.8, 0.7], throughput=6400.0, elapsed_s=1.0, cost=0.001,
                     busy_s={1: 0.04, 2: 0.04}, idle_s={1: 0.0, 2: 0.0},
                     checkpoint_step=None, last_sample=None, pids=(), stage_hosts=hosts)


def test_the_summary_judges_each_stage_by_provenance_never_by_name() -> None:
    # `c6i` made from the catalogue's cpu-c6i.8xlarge (estimated) and `mine` measured on
    # this machine, both bound to this CPU: only `mine` is compared with its prediction.
    records = {"c6i": _record(Tier.ESTIMATED, "roofline for c6i", host=""),
               "mine": _record(Tier.HERE, "cpu (1 threads, Xeon)")}
    result = _result(["mine", "c6i"], {"mine": "cpu", "c6i": "cpu"}, {1: HERE, 2: HERE})
    summary = run_summary(result, 64, flushes=False, records=records)
    assert [(s["resource"], s["substitute"], s["host"]) for s in summary["stages"]] == [
        ("mine", False, HERE), ("c6i", True, HERE)]
    assert summary["substitutes"] == ["stage 2 (c6i) ran on cpu"]
    # Without records (a plan file without provenance) nothing is claimed as same hardware.
    bare = run_summary(result, 64, flushes=False)
    assert all(s["substitute"] for s in bare["stages"])
    # Nor when the stage ran on another machine than its figures were measured on.
    elsewhere = run_summary(_result(["mine", "c6i"], {"mine": "cpu", "c6i": "cpu"},
                                    {1: OTHER, 2: HERE}), 64, flushes=False, records=records)
    assert elsewhere["stages"][0]["substitute"]


def test_a_plan_files_records_are_read_back_from_its_json() -> None:
    records = {"mine": _record(Tier.HERE, "cpu (1 threads, Xeon)")}
    assert from_plan_json({"provenance": provenance.to_json(records)}) == records
    assert from_plan_json({"stages": []}) == {}


def test_where_each_stage_ran_is_read_from_what_its_processes_said(jobs: Any) -> None:
    # Stage 1 has one replica here; stage 2's two replicas said two machines (or one said
    # nothing): where it ran is not known, so it is compared as a substitute.
    import json

    from heterps_core import rendezvous as keys
    from heterps_core.runtime.compile import RunConfig, compile_run
    from heterps_core.runtime.result import stage_hosts

    spec = compile_run(RunConfig(plan=jobs.plan_for(["cpu", "gpu", "gpu", "gpu"], [1, 2]),
                                 train=jobs.settings(8)))
    store = keys.serve()
    said = {0: HERE, 1: HERE, 2: OTHER}
    for rank in spec.ranks:
        if rank.role == "stage":
            store.set(keys.where(rank.rank), json.dumps(
                {"pid": 1, "host": "box", "machine": said[rank.rank]}))
    assert stage_hosts(store, spec) == {1: HERE, 2: ""}
    store.set(keys.where(2), json.dumps({"pid": 1, "host": "box", "machine": HERE}))
    assert stage_hosts(store, spec) == {1: HERE, 2: HERE}
