"""Embedding tables kept by the parameter server: a worker pulls and pushes rows per step.

With the process backend no worker holds a table. `detach_tables(model)` puts a
`RemoteTable` (ps/remote.py) in place of every sparse table and returns what a shard needs
to create the table's rows (`TableSpec`s: width, first values, optimiser); the model's
parameters are then its dense ones only, which is all that workers pull, push and
all-reduce as a flat vector. Per step a worker's `Rows` collects the ids its mini-batch
looks up, pulls their distinct rows from a `RowSource` (the server over the worker's
socket, or a `LocalRows` shard of its own for profiling), and after the backward pass
pushes one gradient row per distinct id (the lookups' gradients summed). The shard applies
the table optimiser to those rows only, lazily per row as torch's SparseAdam and sparse
Adagrad do.

Collective modes (BSP, local SGD) use a synchronous shard: the pushes of one step of every
worker are summed, scaled by 1/workers and applied as one update, and a pull for step t is
answered once step t-1 is applied, so the tables train exactly as with one worker on the
workers' batches together. The other modes use an asynchronous shard (every push one update
as it arrives, as ASP adds every dense update).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

from heterps_core.ps import optim
from heterps_core.ps.remote import BatchRows, Fetch, RemoteTable, collect_rows, replace_table
from heterps_core.ps.rowinit import WeightRows
from heterps_core.ps.shard import Shard, TableSpec
from heterps_core.runtime.tables import sparse_tables
from heterps_core.zoo.base import ChainModel
from heterps_core.zoo.tables import init_of


class RowSource(Protocol):
    """Where a worker's table rows live: `ids[t]` are table t's distinct ids of one step."""

    def pull(self, round_: int, ids: list[torch.Tensor]) -> list[torch.Tensor]: ...

    def push(self, round_: int, ids: list[torch.Tensor], grads: list[torch.Tensor]) -> None: ...


def _prefetched(table: int, ids: torch.Tensor) -> torch.Tensor:
    raise RuntimeError(f"table {table}: a worker pulls its rows before the forward pass")


def detach_tables(model: ChainModel, optimizer: optim.SparseOptimizer, replicas: int = 1,
                  fetch: Fetch = _prefetched) -> list[TableSpec]:
    """Replace every sparse table of `model` by a `RemoteTable` looking up with `fetch`;
    the tables' specs, in the model's table order. Build the model under
    `zoo.tables.tables_on_meta()` so that no table is ever filled."""
    specs = []
    for ref in sparse_tables(model):
        init = init_of(ref.module)
        first = init.rows if init is not None else WeightRows(ref.weight)
        specs.append(TableSpec(int(ref.weight.shape[1]), first, optimizer, replicas))
        replace_table(model.layers[ref.layer], ref.path, ref.table, fetch)
    return specs


def remote_tables(model: ChainModel) -> list[RemoteTable]:
    tables = [m for m in model.modules() if isinstance(m, RemoteTable)]
    return sorted(tables, key=lambda t: t.table)


class LocalRows:
    """A shard in the worker's own process (asynchronous: each push applied at once)."""

    def __init__(self, specs: list[TableSpec]) -> None:
        self.shard = Shard(specs, synchronous=False)

    def pull(self, round_: int, ids: list[torch.Tensor]) -> list[torch.Tensor]:
        return [self.shard.pull(t, part) for t, part in enumerate(ids)]

    def push(self, round_: int, ids: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        for t, (part, grad) in enumerate(zip(ids, grads, strict=True)):
            self.shard.push(t, round_, part, grad)


class Rows:
    """A worker's view of the tables: one step's rows, pulled before and pushed after."""

    def __init__(self, model: ChainModel, source: RowSource, specs: list[TableSpec]) -> None:
        self.tables = remote_tables(model)
        self.source = source
        self.specs = specs
        self.batch: list[BatchRows] = []

    def begin(self, round_: int, forward: Callable[[], object]) -> None:
        """Pull the rows `forward` (the model on this step's inputs) will look up."""
        distinct = collect_rows(self.tables, forward)
        values = self.source.pull(round_, [ids for ids, _ in distinct])
        self.batch = [BatchRows(ids, rows, inverse)
                      for (ids, inverse), rows in zip(distinct, values, strict=True)]
        for table, rows in zip(self.tables, self.batch, strict=True):
            table.begin(rows)

    def push(self, round_: int, scale: float = 1.0) -> None:
        """Send this step's gradient rows; `scale` weighs them (a rebalanced batch share)."""
        grads = [rows.gradient().detach() for rows in self.batch]
        if scale != 1.0:
            grads = [grad * scale for grad in grads]
        self.source.push(round_, [rows.ids for rows in self.batch], grads)

    def local_copy(self, model: ChainModel) -> Rows:
        """The same tables for a copy of the model, held by a shard of its own (profiling
        steps must neither change the server's rows nor wait for it)."""
        return Rows(model, LocalRows(self.specs), self.specs)
