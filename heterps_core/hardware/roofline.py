"""Estimating a layer's time on hardware we don't have, from a measurement on hardware we do.

The rule (documented in docs/zoo-and-profiler.md):

    work(d)     = max(flops / F_d, bytes / W_d)              roofline time on device d
    overhead(d) = kernels * o_d                               fixed per-kernel launch cost
    estimate    = (measured_ref - overhead(ref)) * work(target) / work(ref) + overhead(target)

F_d and W_d are achievable FLOP/s and bytes/s (calibrated on the reference device, datasheet
peak x efficiency elsewhere). A layer is compute-bound on d when its arithmetic intensity
flops/bytes exceeds d's ridge point F_d / W_d, else memory-bound; the bound can differ between
devices. The measured part above the roofline (the reference's inefficiency on this layer) is
carried over in proportion, the launch overhead is not, because it does not scale with work.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from heterps_core.hardware.catalogue import ResourceKind

RULE = "roofline-ratio-v1"


@dataclass(frozen=True)
class OpCount:
    """What one fwd+bwd pass of a layer does: FLOPs, bytes through memory, kernels launched."""

    flops: float
    bytes: float
    kernels: int

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpCount:
        return cls(float(data["flops"]), float(data["bytes"]), int(data["kernels"]))


@dataclass(frozen=True)
class DeviceRates:
    """Achievable rates of one device."""

    name: str
    flops_per_s: float
    bytes_per_s: float
    kernel_overhead_s: float

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) above which a kernel is compute-bound."""
        return self.flops_per_s / self.bytes_per_s

    def work_s(self, count: OpCount) -> float:
        return max(count.flops / self.flops_per_s, count.bytes / self.bytes_per_s)

    def overhead_s(self, count: OpCount) -> float:
        return count.kernels * self.kernel_overhead_s

    def bound(self, count: OpCount) -> str:
        return "compute" if count.intensity > self.ridge else "memory"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceRates:
        return cls(str(data["name"]), float(data["flops_per_s"]), float(data["bytes_per_s"]),
                   float(data["kernel_overhead_s"]))


def rates_of(kind: ResourceKind) -> DeviceRates:
    return DeviceRates(
        name=kind.name,
        flops_per_s=kind.achievable_flops,
        bytes_per_s=kind.achievable_bandwidth,
        kernel_overhead_s=kind.kernel_overhead_us * 1e-6,
    )


@dataclass(frozen=True)
class Estimate:
    """An estimated time with the numbers it came from, so a person can check it."""

    seconds: float
    target: str
    reference: str
    bound: str  # "compute" or "memory", on the target
    intensity: float
    ridge: float
    reference_seconds: float
    rule: str = RULE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate(
    measured_s: float, count: OpCount, reference: DeviceRates, target: DeviceRates
) -> Estimate:
    """The module docstring's rule: scale the measured work part, swap the launch overhead."""
    ref_work = reference.work_s(count)
    ref_overhead = reference.overhead_s(count)
    # Whatever the measurement has beyond the launch overhead is work; never let noise make it
    # smaller than the roofline says is possible.
    measured_work = max(measured_s - ref_overhead, ref_work)
    work = measured_work * target.work_s(count) / ref_work if ref_work > 0 else 0.0
    # The planning instance needs a positive time; a layer that does nothing costs a nanosecond.
    seconds = max(work + target.overhead_s(count), 1e-9)
    return Estimate(
        seconds=seconds,
        target=target.name,
        reference=reference.name,
        bound=target.bound(count),
        intensity=count.intensity,
        ridge=target.ridge,
        reference_seconds=measured_s,
    )
