from dataclasses import replace

import pytest
import torch

from heterps_core import schedulers
from heterps_core.costmodel import evaluate
from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.instance import Instance
from heterps_core.profiler import ProfileError, ProfileOptions, profile_zoo_model
from heterps_core.profiler.instance_builder import build_instance
from heterps_core.profiler.local import LocalMeasure
from heterps_core.profiler.measure import CpuUse, Precision, repeat_until_known


@pytest.fixture(scope="module")
def profile():
    torch.set_num_threads(1)
    return profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=3),
                             size="production", batch_size=256, rows_cap=2000)


def test_the_instance_is_valid_spec_json(profile):
    catalogue = default_catalogue()
    built = build_instance(profile, catalogue, 50_000, samples=1e9)
    again = Instance.from_dict(built.instance.to_dict())
    assert again == built.instance
    inst = built.instance
    assert inst.batch_size == 256 and inst.throughput_target == 50_000 and inst.samples == 1e9
    assert inst.resource_names == catalogue.names
    assert [layer.name for layer in inst.layers] == [layer.name for layer in profile.layers]
    emb = inst.layers[0]
    assert emb.kind == "embedding" and emb.shardable and emb.sync_mb == 0
    assert emb.memory_gb == pytest.approx(profile.layers[0].memory_bytes / 1e9)
    assert inst.layers[1].output_mb == pytest.approx(256 * 400 * 4 / 1e6)
    assert inst.input_mb == pytest.approx(profile.input_bytes / 1e6)
    for layer in inst.layers:
        assert set(layer.compute_s) == set(catalogue.names)


def test_every_number_says_where_it_comes_from(profile):
    built = build_instance(profile, default_catalogue(), 50_000, measured_kind="gpu-t4")
    figures = {(f.layer, f.resource): f for f in built.figures}
    assert len(figures) == len(profile.layers) * len(default_catalogue().kinds)
    measured = figures[("fc1", "gpu-t4")]
    assert measured.source == "measured" and measured.seconds == profile.layers[1].time.median_s
    assert measured.device.startswith("cpu (1 threads") and measured.at == profile.measured_at
    estimated = figures[("fc1", "gpu-a100")]
    assert estimated.source == "estimated" and estimated.device == "gpu-a100"
    # GPUs: operator classes at the GPU's own rates (issue 18), each part recorded
    assert estimated.detail["rule"] == "operator-roofline-v2"
    assert estimated.detail["precision"] == "tf32"  # the A100 default (issue 21)
    assert estimated.detail["bound"] in ("compute", "memory", "gather", "launch")
    parts = sum(estimated.detail[k] for k in ("gemm_s", "memory_s", "gather_s", "launch_s"))
    assert parts == pytest.approx(estimated.seconds)
    cpu = figures[("fc1", "cpu-c6i.8xlarge")]  # CPUs: the measurement scaled (ratio rule)
    assert cpu.detail["rule"] == "roofline-ratio-v1"
    assert cpu.detail["reference_measured_at"] == profile.measured_at
    provenance = built.provenance()
    assert provenance["profile"]["model"] == "ctr_dnn"
    assert len(provenance["compute_s"]) == len(built.figures)


def test_estimates_put_dense_layers_faster_on_gpus(profile):
    inst = build_instance(profile, default_catalogue(), 50_000).instance
    fc2 = inst.layers[2]
    assert fc2.compute_s["gpu-a100"] < fc2.compute_s["cpu-c6i.8xlarge"]
    assert fc2.compute_s["gpu-h100"] < fc2.compute_s["gpu-t4"]


def test_the_exact_scheduler_and_the_cost_model_accept_it(profile):
    inst = build_instance(profile, default_catalogue(), 50_000, samples=1e9).instance
    plan = schedulers.create("exact").plan(inst)
    assert plan.feasible, plan.reason
    assert plan.cost_per_hour == pytest.approx(evaluate(inst, plan.assignment).cost_per_hour)
    # No single resource kind does it cheaper than the exact plan.
    for name in inst.resource_names:
        single = evaluate(inst, [name] * len(inst.layers))
        if single.feasible:
            assert plan.cost_per_hour <= single.cost_per_hour + 1e-9


def test_unknown_measured_kind_is_reported(profile):
    with pytest.raises(ProfileError, match="--device-kind 'tpu' is not in the catalogue"):
        build_instance(profile, default_catalogue(), 50_000, measured_kind="tpu")


def test_bad_target_names_the_field(profile):
    with pytest.raises(InstanceError, match="throughput_target"):
        build_instance(profile, default_catalogue(), -1)


def test_gpu_estimates_follow_the_precision_and_ignore_the_cpu_time(profile):
    from dataclasses import replace

    from heterps_core.hardware.catalogue import with_precision

    catalogue = default_catalogue().select(["cpu-c6i.8xlarge", "gpu-a100", "gpu-v100"])
    fp32 = build_instance(profile, with_precision(catalogue, "fp32"), 50_000).instance
    tf32 = build_instance(profile, catalogue, 50_000).instance  # the A100's default
    fc2_fp32, fc2_tf32 = fp32.layers[2].compute_s, tf32.layers[2].compute_s
    assert fc2_tf32["gpu-a100"] < fc2_fp32["gpu-a100"]
    assert fc2_tf32["gpu-v100"] == fc2_fp32["gpu-v100"]  # no TF32 on a V100
    assert fc2_tf32["cpu-c6i.8xlarge"] == fc2_fp32["cpu-c6i.8xlarge"]
    # A 10x slower CPU measurement changes the CPU figures, not the GPU ones.
    slow_layers = tuple(
        replace(layer, time=replace(layer.time, median_s=layer.time.median_s * 10))
        for layer in profile.layers
    )
    slow = build_instance(replace(profile, layers=slow_layers), catalogue, 50_000).instance
    assert slow.layers[2].compute_s["gpu-a100"] == fc2_tf32["gpu-a100"]
    assert slow.layers[2].compute_s["cpu-c6i.8xlarge"] > 5 * fc2_fp32["cpu-c6i.8xlarge"]


@pytest.fixture(scope="module")
def known_profile():
    """A profile whose figures were repeated until their spread is known."""
    torch.set_num_threads(1)
    with repeat_until_known(Precision(target=0.5, max_repeats=20)):
        return profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=6),
                                 size="tiny", batch_size=64)


def test_measured_figures_carry_their_spread_into_the_instance(known_profile):
    built = build_instance(known_profile, default_catalogue(), 1000,
                           measured_kind="cpu-c6i.8xlarge")
    for layer, timed in zip(built.instance.layers, known_profile.layers, strict=True):
        assert timed.time.median_spread is not None
        # measured here, and CPU estimates scaled from that measurement, carry its spread;
        # GPU estimates from operator counts alone do not
        assert layer.compute_spread["cpu-c6i.8xlarge"] == timed.time.median_spread
        assert layer.compute_spread["cpu-r6i.8xlarge"] == timed.time.median_spread
        assert not any(name.startswith("gpu-") for name in layer.compute_spread)
    again = Instance.from_dict(built.instance.to_dict())
    assert [lyr.compute_spread for lyr in again.layers] == [
        lyr.compute_spread for lyr in built.instance.layers]


def test_instances_without_spreads_are_written_as_before(profile):
    data = build_instance(profile, default_catalogue(), 1000).instance.to_dict()
    assert all("compute_spread" not in layer for layer in data["layers"])  # 3 repeats: unknown


def test_local_types_carry_the_spread_of_their_steps(known_profile):
    n = len(known_profile.layers)
    spreads = tuple(0.01 * (i + 1) for i in range(n))
    local = LocalMeasure((0.001,) * n, 5.0, 1, "2026-12-01T00:00:00+00:00", (0.0,) * n, 0.0,
                         spreads, CpuUse(1.0, 1.0, 1.0), 40)
    inst = build_instance(known_profile, default_catalogue(), 1000, local=local,
                          local_types=2).instance
    assert [lyr.compute_spread["local-2"] for lyr in inst.layers] == list(spreads)


def _timed_under(profile, use):
    layers = tuple(replace(layer, time=replace(layer.time, cpu_use=use))
                   for layer in profile.layers)
    return replace(profile, layers=layers)


def test_figures_timed_under_load_are_labelled_in_the_instance_and_profile(known_profile):
    busy = _timed_under(known_profile, CpuUse(0.5, 1.0, 1.0))
    built = build_instance(busy, default_catalogue(), 1000)
    assert built.instance.name.endswith("(measured under load: 50% of the cores held by others)")
    assert built.provenance()["profile"]["under_load"] is True
    quiet = build_instance(_timed_under(known_profile, CpuUse(0.97, 1.0, 1.0)),
                           default_catalogue(), 1000)
    assert "under load" not in quiet.instance.name
    assert quiet.provenance()["profile"]["under_load"] is False
