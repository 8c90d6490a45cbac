"""Initial row values as a pure function of (table seed, row id): no table is ever drawn.

A row's first value must not depend on which shard holds it, how many shards there are or
when it is first touched, so every row is drawn from its own counter-based stream: a
splitmix64 hash of (seed, row id, counter) gives two 24-bit uniforms, and Box-Muller
turns each such pair into two normals. Everything is vectorised over the rows asked for.

`fill_table_` applies the same function to a whole (small) `nn.Embedding` weight, so a
plain single-process loop starts from exactly the rows a parameter server would create.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

KINDS = ("normal", "uniform", "zeros")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 2.0**-24
_SEED_MASK = 0xFFFFFFFFFFFFFFFF
_FILL_ROWS = 1 << 16  # rows drawn at once by `fill_table_`, to bound its temporary memory


class FirstRows(Protocol):
    """Where a table's rows come from the first time they are touched."""

    def rows(self, ids: torch.Tensor, dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        ...


@dataclass(frozen=True)
class RowInit:
    """How a table's rows start: normal(0, scale), uniform(-scale, scale) or zeros."""

    kind: str
    scale: float
    seed: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"row initialisation must be one of {', '.join(KINDS)}, "
                             f"got {self.kind!r}")

    def rows(self, ids: torch.Tensor, dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The initial values [len(ids), dim] of rows `ids` (global row ids, int64)."""
        return initial_rows(ids, dim, self, dtype)


class WeightRows:
    """First rows read from a table a model built and initialised itself (a user's model
    with a plain sparse `nn.Embedding`): the only case where a whole table is in memory."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight.detach()

    def rows(self, ids: torch.Tensor, dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return self.weight[ids.to(self.weight.device)].to("cpu", dtype)

    def __repr__(self) -> str:
        return f"WeightRows({tuple(self.weight.shape)})"


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array (wrapping arithmetic is defined)."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _uniforms(ids: np.ndarray, seeds: np.ndarray | np.uint64, draws: int) -> np.ndarray:
    """[len(ids), draws] float32 in (0, 1): two 24-bit draws from each hash(seed, id, j),
    with the seed of each id (uint64, one per id or one for all)."""
    hashes = (draws + 1) // 2
    with np.errstate(over="ignore"):
        key = _mix(seeds ^ _mix(ids.astype(np.uint64) * _GOLDEN))
        counters = np.arange(1, hashes + 1, dtype=np.uint64) * _GOLDEN
        bits = _mix(key[:, None] + counters[None, :])
    high = (bits >> np.uint64(40)).astype(np.float32)
    low = ((bits >> np.uint64(8)) & np.uint64(0xFFFFFF)).astype(np.float32)
    u = np.concatenate([high, low], axis=1)[:, :draws]
    u += np.float32(0.5)
    u *= np.float32(_TO_UNIT)
    return u


def initial_rows(
    ids: torch.Tensor, dim: int, init: RowInit, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    flat = ids.detach().reshape(-1).to("cpu", torch.int64).numpy()
    return seeded_rows(flat, seed_of(init), dim, init.kind, init.scale, dtype)


def seed_of(init: RowInit) -> np.uint64:
    return np.uint64(init.seed & _SEED_MASK)


def seeded_rows(
    ids: np.ndarray, seeds: np.ndarray | np.uint64, dim: int, kind: str, scale: float,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """`initial_rows` of ids from several tables of one kind and scale at once: `seeds` holds
    each id's table seed (`seed_of`), so a shard makes the new rows of a message in one call."""
    n = int(ids.size)
    if kind == "zeros" or n == 0:
        return torch.zeros(n, dim, dtype=dtype)
    scale32 = np.float32(scale)
    if kind == "uniform":
        values = (_uniforms(ids, seeds, dim) * np.float32(2.0) - np.float32(1.0)) * scale32
    else:
        # float32 throughout: a first value needs no more, and float64 transcendentals cost
        # seven times as much here.
        pairs = (dim + 1) // 2
        u = _uniforms(ids, seeds, 2 * pairs)
        radius = np.sqrt(np.float32(-2.0) * np.log(u[:, :pairs])) * scale32  # u > 0
        angle = np.float32(2.0 * math.pi) * u[:, pairs:]
        values = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
        values = values[:, :dim]
    return torch.from_numpy(np.ascontiguousarray(values)).to(dtype)


def fill_table_(weight: torch.Tensor, init: RowInit, first_row: int = 0) -> torch.Tensor:
    """Fill `weight` (rows first_row.. of a table) with the rows a parameter server creates."""
    with torch.no_grad():
        for start in range(0, weight.shape[0], _FILL_ROWS):
            stop = min(start + _FILL_ROWS, weight.shape[0])
            ids = torch.arange(first_row + start, first_row + stop, dtype=torch.int64)
            weight[start:stop] = initial_rows(ids, weight.shape[1], init, weight.dtype).to(
                weight.device
            )
    return weight
