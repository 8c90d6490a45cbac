"""Estimating a layer's time on hardware we don't have, from a measurement on hardware we do.

Two rules (documented in docs/zoo-and-profiler.md, section 3):

- GPUs: `operator-roofline-v2` (`estimate_operators`): every operator class at its own rate
  on the target, from the operator counts alone; nothing of the CPU run's inefficiency is
  carried over (a CPU's sparse-backward bookkeeping or cache misses say nothing about a GPU).

    gemm      sum over matrix products of max(flops / P(precision), bytes / W)
    memory    bytes / W                              (elementwise, reductions, copies)
    gather    bytes / (W * gather_efficiency)        (embedding rows: random, short reads)
    launch    kernels * o                            (fixed per operator, any batch size)

  P(precision) is the datasheet peak of the resource's precision (fp32, tf32 tensor cores,
  amp = fp16/bf16 tensor cores) x compute efficiency; under amp, matrix products and
  elementwise traffic move half the bytes (tables stay fp32). Fixed costs (launches, weight
  traffic) make the time per sample grow at small batches, as on real GPUs.

- CPUs (and GPUs profiled before the operator classes were recorded): `roofline-ratio-v1`,
  the measurement scaled by the ratio of roofline times:

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

from heterps_core.hardware.catalogue import ResourceKind, effective_precision

RULE = "roofline-ratio-v1"
OPERATOR_RULE = "operator-roofline-v2"
OP_CLASSES = ("gemm", "gather", "memory")


@dataclass(frozen=True)
class OpClass:
    """The operators of one class in a layer's fwd+bwd: FLOPs, bytes, kernels."""

    flops: float
    bytes: float
    kernels: int

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpClass:
        return cls(float(data["flops"]), float(data["bytes"]), int(data["kernels"]))


@dataclass(frozen=True)
class OpCount:
    """What one fwd+bwd pass of a layer does: FLOPs, bytes through memory, kernels launched,
    and (profiles from issue 18 on) the same per operator class plus every matrix product's
    (flops, bytes)."""

    flops: float
    bytes: float
    kernels: int
    classes: dict[str, OpClass] | None = None
    gemms: tuple[tuple[float, float], ...] = ()

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"flops": self.flops, "bytes": self.bytes, "kernels": self.kernels}
        if self.classes is not None:
            data["classes"] = {k: asdict(v) for k, v in self.classes.items()}
            data["gemms"] = [list(g) for g in self.gemms]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpCount:
        classes = None
        if "classes" in data:
            classes = {k: OpClass.from_dict(v) for k, v in data["classes"].items()}
        gemms = tuple((float(f), float(b)) for f, b in data.get("gemms", ()))
        return cls(float(data["flops"]), float(data["bytes"]), int(data["kernels"]),
                   classes, gemms)


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


@dataclass(frozen=True)
class OperatorEstimate:
    """A GPU time from operator classes (rule operator-roofline-v2), with its parts."""

    seconds: float
    target: str
    precision: str  # the precision the estimate used (after any fallback)
    gemm_s: float
    memory_s: float
    gather_s: float
    launch_s: float
    peak_tflops: float
    rule: str = OPERATOR_RULE

    @property
    def bound(self) -> str:
        """What dominates: compute, memory, gather or launch."""
        parts = {"compute": self.gemm_s, "memory": self.memory_s, "gather": self.gather_s,
                 "launch": self.launch_s}
        return max(parts, key=lambda k: parts[k])

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["bound"] = self.bound
        return data


def estimate_operators(count: OpCount, kind: ResourceKind) -> OperatorEstimate:
    """operator-roofline-v2 on `kind` at its precision; `count` must carry operator classes."""
    if count.classes is None:
        raise ValueError("operator classes were not recorded for this layer")
    precision = effective_precision(kind)
    peak = kind.peak_for(precision)
    flops_per_s = peak * 1e12 * kind.compute_efficiency
    bandwidth = kind.achievable_bandwidth
    # Mixed precision: matrix operands and activations in 16 bits, tables and master weights
    # in fp32 (as NVIDIA's DLRM and torch.autocast do).
    shrink = 0.5 if precision == "amp" else 1.0
    gemm_s = sum(max(f / flops_per_s, b * shrink / bandwidth) for f, b in count.gemms)
    gemm_class = count.classes.get("gemm", OpClass(0.0, 0.0, 0))
    if not count.gemms and gemm_class.flops > 0:  # classes without the per-product list
        gemm_s = max(gemm_class.flops / flops_per_s, gemm_class.bytes * shrink / bandwidth)
    memory = count.classes.get("memory", OpClass(0.0, 0.0, 0))
    gather = count.classes.get("gather", OpClass(0.0, 0.0, 0))
    memory_s = memory.bytes * shrink / bandwidth
    gather_s = gather.bytes / (bandwidth * kind.gather_efficiency)
    launch_s = count.kernels * kind.kernel_overhead_us * 1e-6
    seconds = max(gemm_s + memory_s + gather_s + launch_s, 1e-9)
    return OperatorEstimate(
        seconds=seconds, target=kind.name, precision=precision, gemm_s=gemm_s,
        memory_s=memory_s, gather_s=gather_s, launch_s=launch_s, peak_tflops=peak,
    )
