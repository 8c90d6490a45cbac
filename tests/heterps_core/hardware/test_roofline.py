import pytest

from heterps_core.hardware import default_catalogue
from heterps_core.hardware.roofline import DeviceRates, OpCount, estimate, rates_of

REF = DeviceRates("ref", flops_per_s=1e11, bytes_per_s=1e10, kernel_overhead_s=5e-6)  # ridge 10
FAST = DeviceRates("fast", flops_per_s=1e13, bytes_per_s=1e12, kernel_overhead_s=1e-5)
GEMM = OpCount(flops=1e9, bytes=1e7, kernels=4)  # intensity 100: compute-bound on both
GATHER = OpCount(flops=0.0, bytes=1e7, kernels=4)  # memory-bound everywhere


def test_bound_follows_intensity_against_the_ridge_point():
    assert REF.ridge == pytest.approx(10)
    assert REF.bound(GEMM) == "compute" and REF.bound(GATHER) == "memory"
    middling = OpCount(flops=5e7, bytes=1e7, kernels=1)  # intensity 5
    assert REF.bound(middling) == "memory"
    assert DeviceRates("c", 1e10, 1e10, 0).bound(middling) == "compute"
    assert DeviceRates("m", flops_per_s=1e13, bytes_per_s=1e10, kernel_overhead_s=0).bound(
        GEMM
    ) == "memory"  # a ridge of 1000 makes even this GEMM memory-bound


def test_same_device_gives_back_the_measurement():
    measured = 0.02  # above the roofline of 0.01 s + overhead
    assert estimate(measured, GEMM, REF, REF).seconds == pytest.approx(measured)


def test_compute_bound_layers_scale_with_flops_and_swap_the_overhead():
    measured = 0.01 + 4 * 5e-6  # exactly roofline + overhead on the reference
    est = estimate(measured, GEMM, REF, FAST)
    assert est.seconds == pytest.approx(1e9 / 1e13 + 4 * 1e-5)
    assert est.bound == "compute" and est.intensity == pytest.approx(100)


def test_memory_bound_layers_scale_with_bandwidth():
    measured = 2 * (1e7 / 1e10) + 4 * 5e-6  # twice the roofline: the inefficiency carries over
    est = estimate(measured, GATHER, REF, FAST)
    assert est.seconds == pytest.approx(2 * 1e7 / 1e12 + 4 * 1e-5)
    assert est.bound == "memory"


def test_noise_below_the_roofline_is_not_trusted():
    est = estimate(1e-6, GEMM, REF, FAST)
    assert est.seconds == pytest.approx(1e9 / 1e13 + 4e-5)


def test_estimates_are_positive_for_empty_layers():
    assert estimate(1e-6, OpCount(0, 0, 0), REF, FAST).seconds > 0


def test_catalogue_gpus_estimate_faster_dense_layers_than_cpus():
    catalogue = default_catalogue()
    times = {k.name: estimate(0.05, GEMM, REF, rates_of(k)).seconds for k in catalogue.kinds}
    assert times["gpu-h100"] < times["gpu-a100"] < times["cpu-c6i.8xlarge"]
    assert times["gpu-v100"] < times["gpu-t4"]


# operator-roofline-v2 (issue 18): GPUs from operator classes, not from the CPU's time.

def _classes(gemm_flops: float, gemm_bytes: float, memory_bytes: float, gather_bytes: float,
             kernels: int = 10) -> OpCount:
    from heterps_core.hardware.roofline import OpClass

    return OpCount(
        flops=gemm_flops, bytes=gemm_bytes + memory_bytes + gather_bytes, kernels=kernels,
        classes={"gemm": OpClass(gemm_flops, gemm_bytes, 1),
                 "memory": OpClass(0.0, memory_bytes, kernels - 2),
                 "gather": OpClass(0.0, gather_bytes, 1)},
        gemms=((gemm_flops, gemm_bytes),),
    )


def test_operator_rule_prices_each_class_at_its_own_rate():
    from dataclasses import replace

    from heterps_core.hardware.roofline import estimate_operators

    a100 = replace(default_catalogue().get("gpu-a100"), precision="fp32")
    count = _classes(gemm_flops=1e12, gemm_bytes=1e8, memory_bytes=1e9, gather_bytes=1e8)
    est = estimate_operators(count, a100)
    bandwidth = 1555e9 * 0.8
    assert est.gemm_s == pytest.approx(1e12 / (19.5e12 * 0.8))
    assert est.memory_s == pytest.approx(1e9 / bandwidth)
    assert est.gather_s == pytest.approx(1e8 / (bandwidth * 0.5))
    assert est.launch_s == pytest.approx(10 * 8e-6)
    assert est.seconds == pytest.approx(est.gemm_s + est.memory_s + est.gather_s + est.launch_s)
    assert est.bound == "compute" and est.precision == "fp32"
    tf32 = estimate_operators(count, replace(a100, precision="tf32"))
    assert tf32.gemm_s == pytest.approx(est.gemm_s * 19.5 / 156)  # tensor-core peak
    assert tf32.memory_s == est.memory_s
    amp = estimate_operators(count, replace(a100, precision="amp"))
    assert amp.gemm_s == pytest.approx(est.gemm_s * 19.5 / 312)
    assert amp.memory_s == pytest.approx(est.memory_s / 2)  # 16-bit activations
    assert amp.gather_s == est.gather_s  # tables stay fp32
    v100_tf32 = estimate_operators(count, replace(default_catalogue().get("gpu-v100"),
                                                  precision="tf32"))
    assert v100_tf32.precision == "fp32"  # no TF32 tensor cores: falls back, says so


def test_operator_rule_gives_fixed_costs_at_small_batches():
    # Weights (fixed bytes) and launches (fixed count) do not shrink with the batch, so the
    # time per sample grows at small batches instead of falling, as on real GPUs.
    from heterps_core.hardware.roofline import estimate_operators

    v100 = default_catalogue().get("gpu-v100")
    weights = 4e6

    def per_sample(batch: int) -> float:
        count = _classes(gemm_flops=2e6 * batch * 3, gemm_bytes=weights * 3 + 8e3 * batch,
                         memory_bytes=2e4 * batch, gather_bytes=1e3 * batch, kernels=30)
        return estimate_operators(count, v100).seconds / batch

    times = [per_sample(b) for b in (256, 2048, 32768)]
    assert times[0] > times[1] > times[2]


def test_operator_rule_needs_the_classes():
    from heterps_core.hardware.roofline import estimate_operators

    with pytest.raises(ValueError, match="operator classes"):
        estimate_operators(GEMM, default_catalogue().get("gpu-t4"))


def test_op_counts_round_trip_with_and_without_classes():
    count = _classes(1e9, 1e7, 1e8, 1e6)
    assert OpCount.from_dict(count.to_dict()) == count
    assert OpCount.from_dict(GEMM.to_dict()) == GEMM  # v1 profiles stay readable
    assert "classes" not in GEMM.to_dict()
