"""Every figure's tier: the instance's per-type record, its validation, and where it is set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND
from heterps_core.instance import Instance
from heterps_core.profiler import ProfileOptions, profile_zoo_model
from heterps_core.profiler.instance_builder import build_instance
from heterps_core.profiler.local import LocalMeasure
from heterps_core.profiler.result import ModelProfile
from heterps_core.provenance import (
    MACHINE_ID_FILES,
    ResourceProvenance,
    Tier,
    device_class,
    of_instance,
    of_plan,
    stamp,
    summarise,
    this_host,
)
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).parent / "schedulers" / "data"


def tiny() -> dict[str, Any]:
    return json.loads((DATA / "tiny.json").read_text())


@pytest.fixture(scope="module")
def profile():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=3),
                                 size="tiny", batch_size=64)
    finally:
        torch.set_num_threads(before)


def test_an_instance_without_provenance_reads_as_unknown_and_writes_as_before() -> None:
    data = tiny()
    inst = Instance.from_dict(data)
    assert {r.tier for r in of_instance(inst).values()} == {Tier.UNKNOWN}
    assert not any(r.measured for r in of_instance(inst).values())
    assert inst.to_dict()["resources"] == data["resources"]  # v1 files unchanged


def test_the_record_round_trips_through_the_instance_json() -> None:
    data = tiny()
    data["resources"][0]["provenance"] = {"tier": "measured-agent", "device": "w1: cuda",
                                          "at": "2026-12-02T10:00:00+00:00"}
    data["resources"][1]["provenance"] = {"tier": "estimated", "device": "roofline for gpu",
                                          "band": 0.25}
    inst = Instance.from_dict(data)
    assert Instance.from_json(inst.to_json()) == inst
    cpu, gpu = of_instance(inst)["cpu"], of_instance(inst)["gpu"]
    assert cpu.tier is Tier.AGENT and cpu.measured and cpu.device == "w1: cuda"
    assert gpu.tier is Tier.ESTIMATED and not gpu.measured
    assert gpu.label() == "estimated ±25% (roofline for gpu)"
    assert cpu.label() == "measured by an agent of its type (w1: cuda)"
    # an estimated record without its own band says the validation's
    bare = ResourceProvenance(Tier.ESTIMATED)
    assert bare.label() == f"estimated ±{100 * ESTIMATE_ERROR_BAND:.0f}%"


@pytest.mark.parametrize(("provenance", "field", "problem"), [
    ({"tier": "guessed"}, "resources[0].provenance.tier", "must be one of"),
    ({"device": "x"}, "resources[0].provenance.tier", "missing required field"),
    ({"tier": "estimated", "band": -0.1}, "resources[0].provenance.band", "must not be negative"),
    ({"tier": "estimated", "source": "x"}, "resources[0].provenance.source", "unknown field"),
    ({"tier": "estimated", "counts": {"estimated": 0}}, "resources[0].provenance.counts.estimated",
     "positive integer"),
    ({"tier": "estimated", "device": 3}, "resources[0].provenance.device", "must be a string"),
    ("estimated", "resources[0].provenance", "must be a JSON object"),
])
def test_a_bad_record_is_named_by_its_field(provenance: Any, field: str, problem: str) -> None:
    data = tiny()
    data["resources"][0]["provenance"] = provenance
    with pytest.raises(InstanceError) as caught:
        Instance.from_dict(data)
    assert caught.value.field == field and problem in caught.value.problem


def test_figures_summarise_per_type_with_the_weakest_tier_and_the_mix() -> None:
    figures = [
        {"layer": "emb", "resource": "a", "source": "measured", "device": "w1: cpu",
         "tier": "measured-agent", "at": "2026-12-02T10:00:00"},
        {"layer": "fc", "resource": "a", "source": "measured", "device": "w1: cpu",
         "tier": "measured-agent", "at": "2026-12-02T11:00:00"},
        {"layer": "emb", "resource": "b", "source": "estimated", "device": "b"},
        # a re-plan's correction: measured in a run (no tier stored before tiers existed)
        {"layer": "fc", "resource": "b", "source": "measured", "device": "job 3", "job": 3},
        {"layer": "emb", "resource": "c", "source": "given", "device": "import"},
        {"layer": "emb", "resource": "d", "source": "measured", "device": "old"},
    ]
    records = summarise(figures)
    a, b, c, d = (records[k] for k in "abcd")
    assert a.tier is Tier.AGENT and a.at == "2026-12-02T11:00:00" and not a.counts
    assert a.band is None
    # mixed: the weakest tier leads, the counts say how many of each, the band applies
    assert b.tier is Tier.ESTIMATED and dict(b.counts) == {"estimated": 1, "measured-run": 1}
    assert b.band == ESTIMATE_ERROR_BAND and not b.measured
    assert b.short == "mixed"
    assert b.label().startswith("mixed: 1 measured in a run, 1 estimated ±")
    assert c.tier is Tier.GIVEN
    # measured, but the old record does not say where: not claimed as this host
    assert d.tier is Tier.UNKNOWN


def test_stamp_replaces_only_the_named_types() -> None:
    inst = Instance.from_dict(tiny())
    record = ResourceProvenance(Tier.HERE, "cpu (2 threads)")
    stamped = stamp(inst, {"cpu": record})
    assert of_instance(stamped)["cpu"] == record
    assert of_instance(stamped)["gpu"].tier is Tier.UNKNOWN
    plan = exact_plan(stamped)
    assert list(of_plan(stamped, plan)) == list(dict.fromkeys(plan.assignment or ()))


def test_built_instances_say_estimated_with_the_band_or_measured_here(profile) -> None:
    catalogue = default_catalogue()
    built = build_instance(profile, catalogue, 10_000)
    records = of_instance(built.instance)
    assert set(records) == set(catalogue.names)
    for record in records.values():
        assert record.tier is Tier.ESTIMATED and record.band == ESTIMATE_ERROR_BAND
    # the profiled device named as a catalogue kind: that kind is measured on this host
    measured = build_instance(profile, catalogue, 10_000, measured_kind=catalogue.names[0])
    record = of_instance(measured.instance)[catalogue.names[0]]
    assert record.tier is Tier.HERE and record.measured and record.band is None
    assert record.device == profile.device.label and record.at == profile.measured_at
    again = Instance.from_dict(json.loads(measured.instance.to_json()))
    assert of_instance(again) == of_instance(measured.instance)
    assert {f["tier"] for f in measured.provenance()["compute_s"]} == {"measured-here",
                                                                       "estimated"}


def test_local_types_are_measured_here(profile) -> None:
    n = len(profile.layers)
    local = LocalMeasure(tuple(1e-3 for _ in range(n)), 10.0, 1, "2026-12-02T12:00:00+00:00",
                         tuple(0.0 for _ in range(n)))
    built = build_instance(profile, default_catalogue(), 10_000, local=local, local_types=2)
    records = of_instance(built.instance)
    assert records["local-1"].tier is Tier.HERE and records["local-2"].tier is Tier.HERE
    assert records["local-1"].at == "2026-12-02T12:00:00+00:00"
    others = [r for name, r in records.items() if not name.startswith("local-")]
    assert others and all(r.tier is Tier.ESTIMATED for r in others)


def test_this_host_is_the_host_name_and_the_machine_id() -> None:
    import socket

    host = this_host()
    assert host == this_host()  # stable within the process
    name, _, machine = host.partition("#")
    assert name == socket.gethostname()
    for path in MACHINE_ID_FILES:
        if Path(path).exists() and Path(path).read_text().strip():
            assert machine == Path(path).read_text().strip()[:12]
            break
    else:
        assert machine == ""


def test_a_measured_record_keeps_its_machine_through_the_instance_json() -> None:
    data = tiny()
    data["resources"][0]["provenance"] = {"tier": "measured-here", "device": "cpu (1 threads)",
                                          "host": "box#0123456789ab"}
    inst = Instance.from_dict(data)
    again = Instance.from_json(inst.to_json())
    record = of_instance(again)["cpu"]
    assert record.host == "box#0123456789ab"
    assert record.measured_on == ("box#0123456789ab", "cpu")
    # An old record says nothing about where: never taken as measured on a machine.
    old = of_instance(Instance.from_dict(tiny()))["cpu"]
    assert old.host == "" and old.measured_on is None
    with pytest.raises(InstanceError) as caught:
        Instance.from_dict({**data, "resources": [
            {**data["resources"][0], "provenance": {"tier": "measured-here", "host": 7}},
            *data["resources"][1:]]})
    assert caught.value.field == "resources[0].provenance.host"


def test_figures_of_one_machine_summarise_to_it_and_of_several_to_none() -> None:
    records = summarise([
        {"layer": "emb", "resource": "a", "tier": "measured-agent", "device": "w: cpu (1)",
         "host": "w#1"},
        {"layer": "fc", "resource": "a", "tier": "measured-agent", "device": "w: cpu (1)",
         "host": "w#1"},
        {"layer": "emb", "resource": "b", "tier": "measured-agent", "device": "w: cpu (1)",
         "host": "w#1"},
        {"layer": "fc", "resource": "b", "tier": "measured-agent", "device": "v: cpu (1)",
         "host": "v#2"},
    ])
    assert records["a"].host == "w#1" and records["a"].measured_on == ("w#1", "cpu")
    assert records["b"].host == "" and records["b"].measured_on is None


@pytest.mark.parametrize(("label", "device"), [
    ("cpu (4 threads, Intel(R) Xeon(R) CPU @ 2.20GHz)", "cpu"),
    ("cuda:0 (NVIDIA H200)", "cuda"),
    ("cuda (NVIDIA T4)", "cuda"),
    ("celery@gpu-box: cuda:0 (NVIDIA T4)", "cuda"),
    ("cpu-node1: cuda:0 (NVIDIA T4)", "cuda"),
    ("cpu (2 threads, this machine)", "cpu"),
    ("roofline for cpu-c6i.8xlarge", ""),
    ("this machine", ""),
])
def test_the_device_class_of_a_label(label: str, device: str) -> None:
    assert device_class(label) == device


def test_what_the_profiler_measures_carries_this_machine(profile) -> None:
    assert profile.device.host == this_host()
    measured = build_instance(profile, default_catalogue(), 10_000,
                              measured_kind=default_catalogue().names[0])
    record = of_instance(measured.instance)[default_catalogue().names[0]]
    assert record.host == this_host() and record.measured_on == (this_host(), "cpu")
    estimated = of_instance(measured.instance)[default_catalogue().names[1]]
    assert estimated.host == "" and estimated.measured_on is None
    n = len(profile.layers)
    local = LocalMeasure(tuple(1e-3 for _ in range(n)), 10.0, 2, "2026-12-02T12:00:00+00:00")
    built = build_instance(profile, default_catalogue(), 10_000, local=local, local_types=1)
    assert of_instance(built.instance)["local-1"].measured_on == (this_host(), "cpu")
    # A profile stored before machines were recorded reads as none.
    old = ModelProfile.from_dict({**profile.to_dict(), "device": {
        k: v for k, v in profile.device.to_dict().items() if k != "host"}})
    assert old.device.host == ""
