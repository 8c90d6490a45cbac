"""The default catalogue: common CPU servers and GPUs at public on-demand list prices.

Prices are US-East/US-Central on-demand list prices per instance-hour as published by AWS and
Google Cloud (2024-2025); a GPU unit is a single-GPU instance, or 1/8 of an 8-GPU instance
where no single-GPU instance exists. FLOP/s are FP32 datasheet peaks, plus the dense
tensor-core peaks (TF32, FP16/BF16) used when a kind's `precision` is tf32 or amp. Each kind
trains at the precision people train recommendation models at on it (issue 21): tf32 on
Ampere and later (A10G, A100, H100: NVIDIA's DLRM and containers enable TF32), fp32 on the
V100 and T4 (no TF32 tensor cores); amp is a choice per kind (`"precision": "amp"` in a
catalogue file, the web resource-type form) or per plan (`--precision amp`). Bandwidths are
datasheet memory bandwidths. Edit a copy (`heterps catalogue --out FILE`).
"""

from __future__ import annotations

from typing import Any

from heterps_core.hardware.catalogue import (
    DEFAULT_EFFICIENCY,
    Catalogue,
    ResourceKind,
    default_precision,
)


def _entry(kind: str, name: str, peak_tflops: float, memory_bandwidth_gbs: float,
           memory_gb: float, network_gbps: float, price_per_hour: float, count: int,
           source: str, tf32_tflops: float = 0.0, half_tflops: float = 0.0) -> ResourceKind:
    efficiency = DEFAULT_EFFICIENCY[kind]
    return ResourceKind(
        name=name, kind=kind, peak_tflops=peak_tflops,
        memory_bandwidth_gbs=memory_bandwidth_gbs, memory_gb=memory_gb,
        network_gbps=network_gbps, price_per_hour=price_per_hour, count=count,
        compute_efficiency=efficiency["compute"], bandwidth_efficiency=efficiency["bandwidth"],
        kernel_overhead_us=efficiency["kernel_overhead_us"], source=source,
        tf32_tflops=tf32_tflops, half_tflops=half_tflops, gather_efficiency=efficiency["gather"],
        precision=default_precision(kind, tf32_tflops),
    )


def _cpu(**spec: Any) -> ResourceKind:
    return _entry("cpu", **spec)


def _gpu(**spec: Any) -> ResourceKind:
    return _entry("gpu", **spec)


# Ice Lake 8375C: 16 physical cores (32 vCPU) x 3.5 GHz x 2 AVX-512 FMA units x 16 lanes x 2.
_ICE_LAKE_16C_TFLOPS = 16 * 3.5e9 * 2 * 16 * 2 / 1e12

DEFAULT_KINDS: tuple[ResourceKind, ...] = (
    _cpu(name="cpu-c6i.8xlarge", peak_tflops=_ICE_LAKE_16C_TFLOPS, memory_bandwidth_gbs=100.0,
         memory_gb=64.0, network_gbps=12.5, price_per_hour=1.36, count=64,
         source="AWS c6i.8xlarge (32 vCPU Ice Lake, 64 GiB, 12.5 Gbit/s), $1.36/h us-east-1"),
    _cpu(name="cpu-r6i.8xlarge", peak_tflops=_ICE_LAKE_16C_TFLOPS, memory_bandwidth_gbs=100.0,
         memory_gb=256.0, network_gbps=12.5, price_per_hour=2.016, count=64,
         source="AWS r6i.8xlarge (32 vCPU Ice Lake, 256 GiB, 12.5 Gbit/s), $2.016/h us-east-1"),
    _cpu(name="cpu-r6i.32xlarge", peak_tflops=4 * _ICE_LAKE_16C_TFLOPS,
         memory_bandwidth_gbs=400.0, memory_gb=1024.0, network_gbps=50.0,
         price_per_hour=8.064, count=16,
         source="AWS r6i.32xlarge (128 vCPU Ice Lake, 1 TiB, 50 Gbit/s), $8.064/h us-east-1"),
    _gpu(name="gpu-t4", peak_tflops=8.1, memory_bandwidth_gbs=320.0, memory_gb=16.0,
         network_gbps=25.0, price_per_hour=0.526, count=16, half_tflops=65.0,
         source="AWS g4dn.xlarge (1x T4 16 GB, up to 25 Gbit/s), $0.526/h us-east-1; "
                "T4 datasheet 8.1 TFLOPS FP32, 65 FP16 tensor, no TF32, 320 GB/s"),
    _gpu(name="gpu-a10g", peak_tflops=31.2, memory_bandwidth_gbs=600.0, memory_gb=24.0,
         network_gbps=10.0, price_per_hour=1.006, count=16, tf32_tflops=62.5,
         half_tflops=125.0,
         source="AWS g5.xlarge (1x A10G 24 GB, up to 10 Gbit/s), $1.006/h us-east-1; "
                "A10 datasheet 31.2 TFLOPS FP32, 62.5 TF32 / 125 BF16 tensor (dense), "
                "600 GB/s (NVIDIA publishes no separate A10G tensor figures)"),
    _gpu(name="gpu-v100", peak_tflops=15.7, memory_bandwidth_gbs=900.0, memory_gb=16.0,
         network_gbps=10.0, price_per_hour=3.06, count=8, half_tflops=125.0,
         source="AWS p3.2xlarge (1x V100 16 GB, up to 10 Gbit/s), $3.06/h us-east-1; "
                "V100 SXM2 datasheet 15.7 TFLOPS FP32, 125 FP16 tensor, no TF32, 900 GB/s"),
    _gpu(name="gpu-a100", peak_tflops=19.5, memory_bandwidth_gbs=1555.0, memory_gb=40.0,
         network_gbps=24.0, price_per_hour=3.67, count=8, tf32_tflops=156.0,
         half_tflops=312.0,
         source="GCP a2-highgpu-1g (1x A100 40 GB, 24 Gbit/s), ~$3.67/h us-central1; "
                "A100 datasheet 19.5 TFLOPS FP32, 156 TF32 / 312 BF16 tensor (dense), "
                "1555 GB/s"),
    _gpu(name="gpu-h100", peak_tflops=67.0, memory_bandwidth_gbs=3350.0, memory_gb=80.0,
         network_gbps=400.0, price_per_hour=12.29, count=8, tf32_tflops=494.7,
         half_tflops=989.4,
         source="AWS p5.48xlarge (8x H100 80 GB, 3200 Gbit/s EFA) $98.32/h us-east-1 "
                "(2024 list) / 8; H100 SXM datasheet 67 TFLOPS FP32, 494.7 TF32 / 989.4 "
                "BF16 tensor (dense), 3.35 TB/s"),
)


def default_catalogue() -> Catalogue:
    return Catalogue(DEFAULT_KINDS)
