"""What the parameter server and the worker processes send each other over their pipes.

Vectors travel as numpy arrays: pickled torch tensors would go through shared memory, and
the point of this backend is that an update's bytes really cross from one process to another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from heterps_core.dataparallel.compression import INDEX_BYTES, VALUE_BYTES
from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.events import WorkerProfile
from heterps_core.zoo.base import ModelConfig

STOP = "stop"
GO = "go"


@dataclass(frozen=True)
class Packed:
    """A vector, dense or as (index, value) pairs of the entries that changed."""

    numel: int
    values: np.ndarray  # float32
    indices: np.ndarray | None = None  # int32; None: `values` is the whole vector

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + (0 if self.indices is None else self.indices.nbytes))


def pack(vector: torch.Tensor, mask: torch.Tensor | None = None) -> Packed:
    """`vector`'s entries where `mask` (default: non-zero), in the cheaper encoding."""
    mask = vector != 0 if mask is None else mask
    nonzero = int(mask.sum())
    if nonzero * (VALUE_BYTES + INDEX_BYTES) >= vector.numel() * VALUE_BYTES:
        return Packed(vector.numel(), vector.detach().numpy().astype(np.float32, copy=True))
    indices = mask.nonzero().reshape(-1)
    return Packed(vector.numel(), vector[indices].detach().numpy().astype(np.float32),
                  indices.numpy().astype(np.int32))


def unpack_into(target: torch.Tensor, packed: Packed) -> None:
    """Overwrite `target`'s entries with the packed ones."""
    values = torch.from_numpy(packed.values)
    if packed.indices is None:
        target.copy_(values)
    else:
        target[torch.from_numpy(packed.indices).long()] = values


def dense(packed: Packed) -> torch.Tensor:
    out = torch.zeros(packed.numel)
    unpack_into(out, packed)
    return out


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs to build its replica and its shard."""

    index: int
    model_name: str
    model_config: ModelConfig
    config: TrainConfig
    store_address: str
    profile: bool  # run the profiling phase (skipped when the caller gave a profile)


@dataclass(frozen=True)
class PlanReply:
    """The server's answer to a round request: the mode's plan plus the pull."""

    local_steps: int
    collective: bool
    compress: bool
    topk_ratio: float
    error_feedback: bool
    batch_size: int
    share: float  # this worker's weight in an all-reduce (its batch share)
    pull: Packed


@dataclass(frozen=True)
class Ready:
    worker: int
    profile: WorkerProfile | None


@dataclass(frozen=True)
class Echo:
    """Profiling the link: a dense model one way, an empty answer back."""

    payload: Packed | None


@dataclass(frozen=True)
class RoundRequest:
    worker: int


@dataclass(frozen=True)
class Step:
    worker: int
    loss: float
    step_time_s: float  # wall seconds, the injected slowdown's sleep included
    batch_size: int


@dataclass(frozen=True)
class Push:
    worker: int
    update: Packed
    nbytes: int  # as counted by compression.py (the arrays' bytes for what was sent)
    compressed: bool


@dataclass(frozen=True)
class Collective:
    """A worker finished an all-reduce; worker 0 also hands the averaged update to the server."""

    worker: int
    mean: Packed | None
    wait_s: float


@dataclass(frozen=True)
class Failed:
    worker: int
    text: str


@dataclass(frozen=True)
class RowPull:
    """The rows one step of a worker looks up: `ids[t]`, table t's distinct ids (int64)."""

    worker: int
    round: int  # the worker's step: in a synchronous shard, answered once round-1 is applied
    ids: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        return sum(part.nbytes for part in self.ids)


@dataclass(frozen=True)
class RowReply:
    rows: np.ndarray  # float32: every table's [len(ids[t]), dim] rows, one after the other

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes)

    def split(self, sizes: list[int], dims: list[int]) -> list[np.ndarray]:
        """Table t's rows as [sizes[t], dims[t]]."""
        ends = np.cumsum([n * d for n, d in zip(sizes, dims, strict=True)])[:-1]
        return [part.reshape(n, d) for part, n, d in
                zip(np.split(self.rows, ends), sizes, dims, strict=True)]


@dataclass(frozen=True)
class RowPush:
    """One step's gradient rows of a worker: one summed row per distinct id, per table."""

    worker: int
    round: int
    ids: list[np.ndarray]
    grads: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        return sum(part.nbytes for part in self.ids) + sum(part.nbytes for part in self.grads)
