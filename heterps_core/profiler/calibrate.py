"""Calibrating the reference device: achieved GEMM FLOP/s, copy bandwidth and per-op overhead,
measured with the same thread count the profile uses."""

from __future__ import annotations

import datetime as dt
import platform
from dataclasses import dataclass
from typing import Any

import torch

from heterps_core.hardware.roofline import DeviceRates
from heterps_core.profiler.measure import time_repeats
from heterps_core.provenance import this_host


@dataclass(frozen=True)
class DeviceInfo:
    """Where a measurement was taken."""

    device: str  # "cpu" or "cuda:N"
    threads: int
    description: str  # CPU model or GPU name
    torch_version: str
    host: str = ""  # the machine (provenance.this_host()); "": a profile from before hosts


    @property
    def label(self) -> str:
        if self.device == "cpu":
            return f"cpu ({self.threads} threads, {self.description})"
        return f"{self.device} ({self.description})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "device": self.device, "threads": self.threads, "description": self.description,
            "torch_version": self.torch_version, "label": self.label}
        if self.host:
            data["host"] = self.host
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceInfo:
        return cls(str(data["device"]), int(data["threads"]), str(data["description"]),
                   str(data["torch_version"]), str(data.get("host") or ""))


def describe(device: torch.device, threads: int) -> DeviceInfo:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_model()
    return DeviceInfo(str(device), threads, name, torch.__version__, this_host())


_CALIBRATED: dict[tuple[str, int, str], DeviceRates] = {}


def calibrate(device: torch.device, info: DeviceInfo, clock: str = "wall") -> DeviceRates:
    """Achievable rates of `device`: the reference of every roofline estimate.

    Measured once per process for each (device, threads, clock): the hardware does not change
    between two profiles, and the copy test alone moves half a gigabyte.
    """
    key = (str(device), info.threads, clock)
    if key not in _CALIBRATED:
        _CALIBRATED[key] = _measure_rates(device, info, clock)
    return _CALIBRATED[key]


def _measure_rates(device: torch.device, info: DeviceInfo, clock: str) -> DeviceRates:
    big = device.type == "cuda"
    n = 4096 if big else 1024
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    gemm = time_repeats(lambda: None, lambda _: torch.mm(a, b), 2, 5, device, clock)
    # 1 GiB of float32 on a GPU, 256 MiB on a CPU: beyond the last-level cache of big server
    # parts (up to 256+ MB of L3 on recent EPYCs), so this is DRAM bandwidth.
    elements = 256 * 2**20 if big else 64 * 2**20
    src = torch.empty(elements, device=device).uniform_()
    dst = torch.empty_like(src)
    copy = time_repeats(lambda: None, lambda _: dst.copy_(src), 2, 5, device, clock)
    one = torch.ones(1, device=device)
    tiny = time_repeats(lambda: None, lambda _: _hundred_adds(one), 2, 9, device, clock)
    return DeviceRates(
        name=info.label,
        flops_per_s=2 * n**3 / gemm.median_s,
        bytes_per_s=2 * src.numel() * src.element_size() / copy.median_s,
        kernel_overhead_s=tiny.median_s / 100,
    )


def _hundred_adds(x: torch.Tensor) -> torch.Tensor:
    for _ in range(100):
        x = x + 1
    return x


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
