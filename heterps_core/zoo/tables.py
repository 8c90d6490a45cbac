"""Sparse embedding tables whose rows are a function of (table seed, row id).

A table takes one draw from the global RNG stream (its seed), whatever its size; row g's
first value is then a hash of (seed, g) (`heterps_core.ps.rowinit`), the same value a
parameter-server shard gives the row the first time it is touched. So:

- the dense layers built after a table get the same values whether or not the table was
  filled (a 62 GB production table would otherwise have to be drawn to reach them);
- a process that does not hold a table builds it on the `meta` device (`tables_on_meta`)
  and materialises it later only if it needs it (`materialize`: a plain single-process
  loop, which starts from exactly the rows a parameter server would create);
- no job process ever holds a whole table: stages look up the rows of their mini-batch,
  shards hold the rows touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from torch import nn

from heterps_core.ps.rowinit import KINDS, RowInit, fill_table_

_SEED_RANGE = 1 << 62

Table = nn.Embedding | nn.EmbeddingBag

_on_meta: ContextVar[bool] = ContextVar("heterps_tables_on_meta", default=False)


@dataclass(frozen=True)
class TableInit:
    """How a table's rows are drawn: normal(0, std), uniform(-bound, bound) or zeros."""

    kind: str
    scale: float
    seed: int

    @property
    def rows(self) -> RowInit:
        return RowInit(self.kind, self.scale, self.seed)


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
    """A sparse `nn.Embedding` (or `nn.EmbeddingBag` with `bag_mode`) with hashed rows."""
    if kind not in KINDS:
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
    values = fill_table_(torch.empty(weight.shape, dtype=weight.dtype, device="cpu"), init.rows)
    module.weight = nn.Parameter(values.to(device))
