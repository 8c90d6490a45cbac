import pytest
import torch

from heterps_core import schedulers
from heterps_core.costmodel import evaluate
from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.instance import Instance
from heterps_core.profiler import ProfileError, ProfileOptions, profile_zoo_model
from heterps_core.profiler.instance_builder import build_instance


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
