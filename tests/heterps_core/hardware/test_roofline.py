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
