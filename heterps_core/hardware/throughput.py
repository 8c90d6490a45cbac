"""One unit of a resource type running a whole model: samples/s from the per-layer figures
a planning instance holds, with the per-operator breakdown and the estimate's error band.

`heterps estimate` prints this, and the figures it sums are the instance builder's own (the
ones `heterps profile` writes for that type), so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heterps_core.hardware.accuracy import ESTIMATE_BAND_SOURCE, ESTIMATE_ERROR_BAND
from heterps_core.hardware.catalogue import ResourceKind
from heterps_core.hardware.roofline import OP_CLASSES, OPERATOR_RULE, OpClass, OpCount

# The operator classes of rule operator-roofline-v2 and the part of its estimate each prices.
_PARTS = {"gemm": "gemm_s", "memory": "memory_s", "gather": "gather_s"}


@dataclass(frozen=True)
class LayerFigure:
    """One layer's time per mini-batch on the resource, as the instance holds it."""

    name: str
    seconds: float
    rule: str  # operator-roofline-v2 (GPU, from operator counts) or roofline-ratio-v1
    detail: dict[str, Any]
    ops: OpCount

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.seconds, "rule": self.rule,
                "detail": self.detail}


@dataclass(frozen=True)
class OperatorShare:
    """One operator class over the whole model: what it does per mini-batch and, under
    operator-roofline-v2, the seconds it is priced at."""

    name: str  # gemm, memory, gather, launch
    flops: float
    bytes: float
    kernels: int
    seconds: float | None  # None where the rule does not price classes (CPU types)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "flops": self.flops, "bytes": self.bytes,
                "kernels": self.kernels, "seconds": self.seconds}


@dataclass(frozen=True)
class ModelEstimate:
    """The estimated throughput of one unit of `resource` training the whole model."""

    model: str
    size: str
    resource: ResourceKind
    precision: str  # what matrix products run at (after a GPU's fallback to fp32)
    batch_size: int
    layers: tuple[LayerFigure, ...]
    operators: tuple[OperatorShare, ...]
    model_memory_gb: float  # what one unit must hold to run every layer
    error_band: float | None  # relative; None: not validated (see `band_basis`)
    band_basis: str

    @property
    def seconds_per_batch(self) -> float:
        return sum(layer.seconds for layer in self.layers)

    @property
    def samples_per_s(self) -> float:
        return self.batch_size / self.seconds_per_batch

    @property
    def fits(self) -> bool:
        return self.model_memory_gb <= self.resource.memory_gb

    def notes(self) -> list[str]:
        notes = []
        if self.resource.kind == "gpu" and self.precision != self.resource.precision:
            notes.append(f"{self.resource.name} has no {self.resource.precision} tensor cores: "
                         f"its matrix products run in {self.precision}")
        if not self.fits:
            notes.append(f"the whole model needs {self.model_memory_gb:,.1f} GB and one "
                         f"{self.resource.name} holds {self.resource.memory_gb:g} GB: this is "
                         "the rate of its compute alone; a plan puts the tables elsewhere")
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "size": self.size, "resource": self.resource.name,
            "kind": self.resource.kind, "precision": self.precision,
            "batch_size": self.batch_size, "samples_per_s": self.samples_per_s,
            "seconds_per_batch": self.seconds_per_batch,
            "operators": [op.to_dict() for op in self.operators],
            "layers": [layer.to_dict() for layer in self.layers],
            "error_band": self.error_band, "error_band_basis": self.band_basis,
            "model_memory_gb": self.model_memory_gb, "unit_memory_gb": self.resource.memory_gb,
            "notes": self.notes(),
        }


def model_estimate(model: str, size: str, resource: ResourceKind, precision: str,
                   batch_size: int, layers: list[LayerFigure],
                   model_memory_gb: float) -> ModelEstimate:
    """The layers' figures summed, the operator classes gathered, the band attached."""
    by_classes = all(layer.rule == OPERATOR_RULE for layer in layers)
    band, basis = (ESTIMATE_ERROR_BAND, ESTIMATE_BAND_SOURCE) if by_classes else (
        None, "not validated: a CPU type's figure scales this machine's measurement by the "
              "roofline ratio (docs/zoo-and-profiler.md, section 3)")
    return ModelEstimate(model, size, resource, precision, batch_size, tuple(layers),
                         _operators(layers, by_classes), model_memory_gb, band, basis)


def _operators(layers: list[LayerFigure], priced: bool) -> tuple[OperatorShare, ...]:
    shares = []
    empty = OpClass(0.0, 0.0, 0)
    for name in OP_CLASSES:
        parts = [(layer.ops.classes or {}).get(name, empty) for layer in layers]
        seconds = sum(float(layer.detail[_PARTS[name]]) for layer in layers) if priced else None
        shares.append(OperatorShare(name, sum(p.flops for p in parts),
                                    sum(p.bytes for p in parts),
                                    sum(p.kernels for p in parts), seconds))
    launches = sum(layer.ops.kernels for layer in layers)
    launch_s = sum(float(layer.detail["launch_s"]) for layer in layers) if priced else None
    shares.append(OperatorShare("launch", 0.0, 0.0, launches, launch_s))
    return tuple(shares)
