"""The catalogue of resource kinds: specs for roofline estimates plus what the planner needs
(price, count, memory, network). Users edit a JSON copy; `Catalogue.from_dict` validates it.

Defaults are public on-demand list prices (see docs/zoo-and-profiler.md for sources). FLOP/s
are dense FP32 peaks plus the tensor-core peaks (TF32, FP16/BF16) of each GPU; `precision` says
which of them a kind's matrix products run at.

Versions (`CATALOGUE_VERSION`): version 2 (issue 21) reads `precision` as written, and a GPU
entry without one trains as people train it: tf32 where the GPU has TF32 tensor cores
(Ampere and later), else fp32. Version 1 files wrote `"precision": "fp32"` for every kind
because fp32 was the only default then, not a choice, so a version-1 "fp32" GPU gets the
version-2 default; any other precision in a version-1 file was chosen and is kept.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

from heterps_core import validation
from heterps_core.errors import InstanceError
from heterps_core.instance import Resource

CATALOGUE_VERSION = 2
READABLE_VERSIONS = (1, 2)
KINDS = ("cpu", "gpu")
# Training precisions: fp32; tf32 (fp32 storage, matrix products on TF32 tensor cores:
# Ampere and later); amp (fp16/bf16 mixed precision on tensor cores; "bf16" is an alias).
PRECISIONS = ("fp32", "tf32", "amp")
PRECISION_ALIASES = {"bf16": "amp", "fp16": "amp"}

# Fractions of datasheet peaks that well-tuned training kernels reach; the reference device is
# calibrated instead, so its efficiencies come from measurement.
DEFAULT_EFFICIENCY = {
    "cpu": {"compute": 0.6, "bandwidth": 0.7, "kernel_overhead_us": 4.0, "gather": 0.5},
    "gpu": {"compute": 0.8, "bandwidth": 0.8, "kernel_overhead_us": 8.0, "gather": 0.5},
}


class CatalogueError(InstanceError):
    """A catalogue entry with a missing or bad field."""


# The shared validators, raising this module's error so callers can tell the source apart.
_positive = partial(validation.positive_number, error=CatalogueError)
_non_negative = partial(validation.non_negative_number, error=CatalogueError)
_fraction = partial(validation.fraction, error=CatalogueError)
_positive_int = partial(validation.positive_int, error=CatalogueError)


@dataclass(frozen=True)
class ResourceKind:
    """One kind of unit a cluster can rent: a CPU server or one GPU (with its host share)."""

    name: str
    kind: str  # "cpu" or "gpu"
    peak_tflops: float  # dense FP32 peak, 10^12 FLOP/s
    memory_bandwidth_gbs: float  # 10^9 bytes/s, device memory (DRAM for CPUs, HBM/GDDR for GPUs)
    memory_gb: float  # memory a layer can use on one unit
    network_gbps: float  # 10^9 bits/s per unit
    price_per_hour: float  # dollars per unit-hour (public on-demand list price by default)
    count: int = 8  # units available to the planner
    compute_efficiency: float = 0.6
    bandwidth_efficiency: float = 0.8
    kernel_overhead_us: float = 8.0  # fixed cost per launched kernel (fwd and bwd)
    source: str = ""  # where the specs and price come from
    # Issue 18: tensor-core peaks (dense, 10^12 FLOP/s; 0 = none), the precision training
    # runs at, and the fraction of the streaming bandwidth random embedding rows reach.
    tf32_tflops: float = 0.0
    half_tflops: float = 0.0  # fp16/bf16 tensor cores (amp)
    precision: str = "fp32"  # see default_precision for what a catalogue file omits
    gather_efficiency: float = 0.5

    def peak_for(self, precision: str) -> float:
        """The dense peak (10^12 FLOP/s) of matrix products at `precision`."""
        peak = {"fp32": self.peak_tflops, "tf32": self.tf32_tflops,
                "amp": self.half_tflops}[precision]
        return peak or self.peak_tflops

    @property
    def achievable_flops(self) -> float:
        return self.peak_tflops * 1e12 * self.compute_efficiency

    @property
    def achievable_bandwidth(self) -> float:
        return self.memory_bandwidth_gbs * 1e9 * self.bandwidth_efficiency

    def to_resource(self) -> Resource:
        return Resource(
            name=self.name,
            kind=self.kind,
            price_per_hour=self.price_per_hour,
            count=self.count,
            memory_gb=self.memory_gb,
            network_gbps=self.network_gbps,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "resource",
                  version: int = CATALOGUE_VERSION) -> ResourceKind:
        """One entry; `version` is the catalogue file's (see the module docstring)."""
        required = ("name", "kind", "peak_tflops", "memory_bandwidth_gbs", "memory_gb",
                    "network_gbps", "price_per_hour")
        spec = {f.name: f.name in required for f in fields(cls)}
        validation.check_fields(data, where, spec, error=CatalogueError)
        kind = data["kind"]
        if kind not in KINDS:
            raise CatalogueError(
                f"{where}.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}"
            )
        defaults = DEFAULT_EFFICIENCY[kind]
        name = validation.non_empty_string(data["name"], f"{where}.name", error=CatalogueError)
        source = data.get("source", "")
        if not isinstance(source, str):
            raise CatalogueError(f"{where}.source", "must be a string")
        tf32_tflops = _non_negative(data.get("tf32_tflops", 0.0), f"{where}.tf32_tflops")
        precision = data.get("precision")
        if precision is None or (version == 1 and precision == "fp32"):
            precision = default_precision(kind, tf32_tflops)
        if not isinstance(precision, str):
            raise CatalogueError(f"{where}.precision", f"must be a string, got {precision!r}")
        precision = check_precision(precision, f"{where}.precision")
        count = _positive_int(data.get("count", 8), f"{where}.count")
        efficiency = {
            key: _fraction(
                data.get(f"{key}_efficiency", defaults[key]), f"{where}.{key}_efficiency"
            )
            for key in ("compute", "bandwidth")
        }
        return cls(
            name=name,
            kind=kind,
            peak_tflops=_positive(data["peak_tflops"], f"{where}.peak_tflops"),
            memory_bandwidth_gbs=_positive(
                data["memory_bandwidth_gbs"], f"{where}.memory_bandwidth_gbs"
            ),
            memory_gb=_positive(data["memory_gb"], f"{where}.memory_gb"),
            network_gbps=_positive(data["network_gbps"], f"{where}.network_gbps"),
            price_per_hour=_positive(data["price_per_hour"], f"{where}.price_per_hour"),
            count=count,
            compute_efficiency=efficiency["compute"],
            bandwidth_efficiency=efficiency["bandwidth"],
            kernel_overhead_us=_non_negative(
                data.get("kernel_overhead_us", defaults["kernel_overhead_us"]),
                f"{where}.kernel_overhead_us",
            ),
            source=source,
            tf32_tflops=tf32_tflops,
            half_tflops=_non_negative(data.get("half_tflops", 0.0), f"{where}.half_tflops"),
            precision=precision,
            gather_efficiency=_fraction(
                data.get("gather_efficiency", defaults["gather"]), f"{where}.gather_efficiency"
            ),
        )


def default_precision(kind: str, tf32_tflops: float) -> str:
    """The precision a kind trains at unless told otherwise: as people train recommendation
    models, tf32 on GPUs with TF32 tensor cores (NVIDIA's containers and DLRM enable it;
    A10G, A100, H100), else fp32 (V100, T4 and CPUs). amp is always a choice."""
    return "tf32" if kind == "gpu" and tf32_tflops > 0 else "fp32"


def check_precision(precision: str, field: str = "precision") -> str:
    """fp32, tf32 or amp (bf16/fp16 read as amp), or a CatalogueError naming `field`."""
    canonical = PRECISION_ALIASES.get(precision, precision)
    if canonical not in PRECISIONS:
        raise CatalogueError(field, f"must be one of {', '.join(PRECISIONS)} (or bf16/fp16 "
                                    f"for amp), got {precision!r}")
    return canonical


def effective_precision(kind: ResourceKind) -> str:
    """The precision matrix products really run at: a GPU without TF32 (or fp16/bf16)
    tensor cores runs them in fp32, as PyTorch does with TF32 allowed on a V100."""
    if kind.precision == "tf32" and kind.tf32_tflops <= 0:
        return "fp32"
    if kind.precision == "amp" and kind.half_tflops <= 0:
        return "fp32"
    return kind.precision


def with_precision(catalogue: Catalogue, precision: str) -> Catalogue:
    """Every GPU kind of `catalogue` at `precision` (fp32, tf32, amp/bf16); CPUs unchanged."""
    from dataclasses import replace

    precision = check_precision(precision)
    return Catalogue(tuple(
        replace(k, precision=precision) if k.kind == "gpu" else k for k in catalogue.kinds
    ))


@dataclass(frozen=True)
class Catalogue:
    """An ordered set of resource kinds with unique names."""

    kinds: tuple[ResourceKind, ...]

    def __post_init__(self) -> None:
        if not self.kinds:
            raise CatalogueError("resources", "must be a non-empty list")
        seen: set[str] = set()
        for i, kind in enumerate(self.kinds):
            if kind.name in seen:
                raise CatalogueError(f"resources[{i}].name", f"duplicate name {kind.name!r}")
            seen.add(kind.name)

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.kinds]

    def get(self, name: str) -> ResourceKind:
        for kind in self.kinds:
            if kind.name == name:
                return kind
        raise CatalogueError("resource", f"no kind named {name!r}; known: {', '.join(self.names)}")

    def select(self, names: list[str]) -> Catalogue:
        return Catalogue(tuple(self.get(n) for n in names))

    def to_dict(self) -> dict[str, Any]:
        return {"version": CATALOGUE_VERSION, "resources": [k.to_dict() for k in self.kinds]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def from_dict(cls, data: Any) -> Catalogue:
        """Accepts {"version": 2, "resources": [...]} (or version 1, see the module
        docstring) or a bare list of entries (read as the current version)."""
        version = CATALOGUE_VERSION
        if isinstance(data, dict):
            for key in data:
                if key not in ("version", "resources"):
                    raise CatalogueError(key, "unknown field")
            version = data.get("version", CATALOGUE_VERSION)
            if version not in READABLE_VERSIONS:
                raise CatalogueError("version", f"must be one of "
                                                f"{', '.join(map(str, READABLE_VERSIONS))}, "
                                                f"got {version!r}")
            if "resources" not in data:
                raise CatalogueError("resources", "missing required field")
            data = data["resources"]
        if not isinstance(data, list) or not data:
            raise CatalogueError("resources", "must be a non-empty list")
        return cls(tuple(ResourceKind.from_dict(d, f"resources[{i}]", version)
                         for i, d in enumerate(data)))

    @classmethod
    def load(cls, path: str | Path) -> Catalogue:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise CatalogueError(str(path), f"cannot read file ({exc.strerror})") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CatalogueError(
                str(path), f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from exc
        return cls.from_dict(data)
