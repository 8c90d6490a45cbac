"""Sparse embedding tables that any process can build in part: one row chunk at a time.

A table takes one draw from the global RNG stream (its seed), whatever its size, and fills
each chunk of `CHUNK_ROWS` rows from a generator seeded by (seed, chunk). So:

- the dense layers built after a table get the same values whether or not the table was
  filled (a 62 GB production table would otherwise have to be drawn to reach them);
- a process that does not hold a table builds it on the `meta` device (`tables_on_meta`)
  and materialises it later only if it needs it (`materialize`);
- a parameter-server shard generates only its own rows (`shard_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from torch import nn

CHUNK_ROWS = 1 << 16
_SEED_RANGE = 1 << 62

Table = nn.Embedding | nn.EmbeddingBag
Fill = Callable[[torch.Tensor, torch.Generator], None]

_on_meta: ContextVar[bool] = ContextVar("heterps_tables_on_meta", default=False)


@dataclass(frozen=True)
class TableInit:
    """How a table's rows are drawn: normal(0, std), uniform(-bound, bound) or zeros."""

    kind: str
    scale: float
    seed: int

    def fill(self, rows: torch.Tensor, generator: torch.Generator) -> None:
        with torch.no_grad():
            if self.kind == "normal":
                rows.normal_(0.0, self.scale, generator=generator)
            elif self.kind == "uniform":
                rows.uniform_(-self.scale, self.scale, generator=generator)
            else:
                rows.zero_()


@contextmanager
def tables_on_meta() -> Iterator[None]:
    """Tables built inside stay on the `meta` device: no memory, no values, same RNG use."""
    token = _on_meta.set(True)
    try:
        yield
    finally:
        _on_meta.reset(token)


def sparse_table(
    rows: int,
    dim: int,
    kind: str = "normal",
    scale: float = 0.01,
    bag_mode: str | None = None,
) -> Table:
    """A sparse `nn.Embedding` (or `nn.EmbeddingBag` with `bag_mode`) initialised by chunks."""
    if kind not in ("normal", "uniform", "zeros"):
        raise ValueError(f"unknown table initialisation {kind!r}")
    module: Table
    if bag_mode is None:
        module = nn.Embedding(rows, dim, sparse=True, device="meta")
    else:
        module = nn.EmbeddingBag(rows, dim, mode=bag_mode, sparse=True, device="meta")
    seed = int(torch.randint(0, _SEED_RANGE, (1,), device="cpu"))
    module.heterps_init = TableInit(kind, scale, seed)  # type: ignore[assignment]
    if not _on_meta.get() and torch.get_default_device().type != "meta":
        materialize(module)
    return module


def init_of(module: nn.Module) -> TableInit | None:
    init = getattr(module, "heterps_init", None)
    return init if isinstance(init, TableInit) else None


def materialize(module: nn.Module, device: str | torch.device = "cpu") -> None:
    """Give a table built on `meta` its real rows (a no-op for any other module)."""
    init = init_of(module)
    weight = getattr(module, "weight", None)
    if init is None or not isinstance(weight, torch.Tensor) or not weight.is_meta:
        return
    values = torch.empty(weight.shape, dtype=weight.dtype, device="cpu")
    for chunk in range(_chunks(weight.shape[0])):
        start = chunk * CHUNK_ROWS
        init.fill(values[start : start + CHUNK_ROWS], _generator(init, chunk))
    module.weight = nn.Parameter(values.to(device))


def shard_rows(module: nn.Module, shard: int, shards: int) -> torch.Tensor:
    """Rows g with g mod shards == shard, in order, without the whole table in memory."""
    weight = getattr(module, "weight", None)
    assert isinstance(weight, torch.Tensor), "a table has a weight"
    init = init_of(module)
    if init is None or not weight.is_meta:
        return weight.detach()[shard::shards].clone()
    n_rows, dim = weight.shape
    out = torch.empty(len(range(shard, n_rows, shards)), dim, dtype=weight.dtype, device="cpu")
    chunk_rows = torch.empty(CHUNK_ROWS, dim, dtype=weight.dtype, device="cpu")
    written = 0
    for chunk in range(_chunks(n_rows)):
        start = chunk * CHUNK_ROWS
        rows = chunk_rows[: min(CHUNK_ROWS, n_rows - start)]
        init.fill(rows, _generator(init, chunk))
        mine = rows[(shard - start) % shards :: shards]
        out[written : written + mine.shape[0]] = mine
        written += mine.shape[0]
    return out


def _chunks(n_rows: int) -> int:
    return math.ceil(n_rows / CHUNK_ROWS)


def _generator(init: TableInit, chunk: int) -> torch.Generator:
    return torch.Generator().manual_seed((init.seed + chunk * 1_000_003) % _SEED_RANGE)
