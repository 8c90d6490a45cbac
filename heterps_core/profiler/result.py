"""Profile results as plain dataclasses with to_dict/from_dict (the web app stores them as JSON).

Times are measured (with their spread); sizes (parameters, activations, sync, memory) are
computed from tensor shapes of the model configuration that will be planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heterps_core.hardware.roofline import DeviceRates, OpCount
from heterps_core.profiler.calibrate import DeviceInfo
from heterps_core.profiler.measure import CpuUse, Measurement


@dataclass(frozen=True)
class LayerProfile:
    """One chain layer on one device: fwd+bwd time per batch and what it moves and stores."""

    index: int
    name: str
    kind: str
    shardable: bool
    parameters: int  # of the configuration being planned (may be larger than the one timed)
    parameter_bytes: int
    optimizer_bytes: int  # optimizer state (+ dense gradients) kept beside the parameters
    activation_bytes: int  # output tensor per batch, sent to the next layer
    sync_bytes: int  # dense gradient bytes all-reduced among replicas per batch
    sparse_bytes: int  # embedding rows pulled from / pushed to the parameter server per batch
    memory_bytes: int  # what one unit running this layer must hold
    ops: OpCount
    time: Measurement
    # Distinct rows of sparse tables a batch touches (each pulled once, pushed once); 0 in
    # profiles stored before it was counted.
    sparse_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "shardable": self.shardable,
            "parameters": self.parameters,
            "parameter_bytes": self.parameter_bytes,
            "optimizer_bytes": self.optimizer_bytes,
            "activation_bytes": self.activation_bytes,
            "sync_bytes": self.sync_bytes,
            "sparse_bytes": self.sparse_bytes,
            "sparse_rows": self.sparse_rows,
            "memory_bytes": self.memory_bytes,
            "ops": self.ops.to_dict(),
            "time": self.time.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LayerProfile:
        return cls(
            index=int(data["index"]),
            name=str(data["name"]),
            kind=str(data["kind"]),
            shardable=bool(data["shardable"]),
            parameters=int(data["parameters"]),
            parameter_bytes=int(data["parameter_bytes"]),
            optimizer_bytes=int(data["optimizer_bytes"]),
            activation_bytes=int(data["activation_bytes"]),
            sync_bytes=int(data["sync_bytes"]),
            sparse_bytes=int(data["sparse_bytes"]),
            memory_bytes=int(data["memory_bytes"]),
            ops=OpCount.from_dict(data["ops"]),
            time=Measurement.from_dict(data["time"]),
            sparse_rows=int(data.get("sparse_rows", 0)),
        )


@dataclass(frozen=True)
class ModelProfile:
    """A whole chain profiled on one device at one batch size."""

    model: str
    size: str
    batch_size: int
    input_bytes: int  # inputs read by layer 0 per batch
    device: DeviceInfo
    reference: DeviceRates  # calibrated rates of that device (for roofline estimates)
    measured_at: str  # ISO 8601, UTC
    optimizer: str
    rows_cap: int | None  # tables were capped at this many rows for timing (memory is uncapped)
    layers: tuple[LayerProfile, ...]

    @property
    def total_s(self) -> float:
        return sum(layer.time.median_s for layer in self.layers)

    @property
    def cpu_use(self) -> CpuUse | None:
        """The process's CPU time against the cores' time over every timed call (None on a
        GPU, or for profiles stored before it was taken)."""
        return CpuUse.total([layer.time.cpu_use for layer in self.layers])

    @property
    def under_load(self) -> bool:
        """Timed while other processes held more of the cores than `HELD_LIMIT` allows."""
        use = self.cpu_use
        return use is not None and use.under_load

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "size": self.size,
            "batch_size": self.batch_size,
            "input_bytes": self.input_bytes,
            "device": self.device.to_dict(),
            "reference": self.reference.to_dict(),
            "measured_at": self.measured_at,
            "optimizer": self.optimizer,
            "rows_cap": self.rows_cap,
            "layers": [layer.to_dict() for layer in self.layers],
            # Derived from the layers' figures (never read back): the load label at a glance.
            "cpu_use": self.cpu_use.to_dict() if self.cpu_use else None,
            "under_load": self.under_load,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelProfile:
        return cls(
            model=str(data["model"]),
            size=str(data["size"]),
            batch_size=int(data["batch_size"]),
            input_bytes=int(data["input_bytes"]),
            device=DeviceInfo.from_dict(data["device"]),
            reference=DeviceRates.from_dict(data["reference"]),
            measured_at=str(data["measured_at"]),
            optimizer=str(data["optimizer"]),
            rows_cap=None if data.get("rows_cap") is None else int(data["rows_cap"]),
            layers=tuple(LayerProfile.from_dict(d) for d in data["layers"]),
        )
