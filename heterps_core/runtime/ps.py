"""The parameter server: shards of the sparse embedding tables, and the client stages use.

Row g of a table lives on shard g mod n. A stage pulls the rows a micro-batch looks up just
before the lookup (a forward pre-hook on the embedding module), and pushes the rows' sparse
gradients after its backward pass; the server applies SGD to them.

Pushes are never acknowledged: messages from one sender arrive in order, so a stage's pull
always finds its own earlier pushes applied, without a round trip.
Synchronous mode: the pushes of one round (one mini-batch per replica of the owning stage)
are summed and applied together, and a pull for round t is answered only once round t-1
is applied, so a run is repeatable and equals plain SGD.
Asynchronous mode: pushes are applied as they arrive and pulls are answered at once (a
replica may read rows that miss another replica's latest update).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from heterps_core.runtime.checkpoint import save_part
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.tables import (
    HEADER,
    OP_CHECKPOINT,
    OP_DONE,
    OP_PULL,
    OP_PUSH,
    client_ranks,
    owning_stage,
    sparse_tables,
)
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox
from heterps_core.zoo.base import ChainModel
from heterps_core.zoo.tables import shard_rows


@dataclass
class _Table:
    rows: torch.Tensor
    replicas: int
    applied_round: int
    pending: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = field(default_factory=dict)


class ParameterServer:
    """One shard. `serve` runs until every client has said it is done."""

    def __init__(self, spec: JobSpec, shard: int, model: ChainModel, synchronous: bool) -> None:
        self.spec = spec
        self.shard = shard
        self.shards = spec.ps_shards
        self.synchronous = synchronous
        self.lr = spec.train.lr
        refs = sparse_tables(model)
        self.clients = client_ranks(spec, refs)
        self.tables: list[_Table] = []
        for ref in refs:
            replicas = spec.stages[owning_stage(spec, ref)].units
            start_round = spec.start_step // replicas
            rows = shard_rows(ref.module, shard, self.shards)
            self.tables.append(_Table(rows, replicas, start_round - 1))
        self._waiting: list[tuple[int, int, int, torch.Tensor]] = []  # src, table, round, idx
        self._markers: dict[tuple[int, int], int] = {}
        self._done = 0
        self.outbox = Outbox()

    def load(self, state: dict[str, Any]) -> None:
        for table, rows in zip(self.tables, state["rows"], strict=True):
            table.rows.copy_(rows)

    def serve(self) -> None:
        header = torch.empty(HEADER, dtype=torch.int64)
        while self._done < len(self.clients):
            src = dist.recv(header, None, tag=TAG_PS_REQUEST)
            op, table, round_, n = (int(v) for v in header)
            if op == OP_PULL:
                idx = self._recv(src, torch.empty(n, dtype=torch.int64))
                self._waiting.append((src, table, round_, idx))
            elif op == OP_PUSH:
                self._push(src, table, round_, n)
            elif op == OP_CHECKPOINT:
                self._marker(OP_CHECKPOINT, round_)
            elif op == OP_DONE:
                self._done += 1
            self._answer_pulls()
            self.outbox.flush()

    def _recv(self, src: int, tensor: torch.Tensor) -> torch.Tensor:
        dist.recv(tensor, src, tag=TAG_PS_PAYLOAD)
        return tensor

    # Updates scale the values first: index_add_ with `alpha` takes a slow per-row path on the
    # CPU (about 12x slower for a mini-batch's rows in torch 2.13).
    def _push(self, src: int, t: int, round_: int, n: int) -> None:
        table = self.tables[t]
        idx = self._recv(src, torch.empty(n, dtype=torch.int64))
        values = self._recv(src, torch.empty(n, table.rows.shape[1], dtype=table.rows.dtype))
        if not self.synchronous:
            table.rows.index_add_(0, idx, values * (-self.lr / table.replicas))
            return
        table.pending.setdefault(round_, []).append((idx, values))
        # Rounds complete in order: every replica pushes each round before its next pull.
        while len(table.pending.get(table.applied_round + 1, [])) == table.replicas:
            for idx_r, values_r in table.pending.pop(table.applied_round + 1):
                table.rows.index_add_(0, idx_r, values_r * (-self.lr / table.replicas))
            table.applied_round += 1

    def _answer_pulls(self) -> None:
        still: list[tuple[int, int, int, torch.Tensor]] = []
        for src, t, round_, idx in self._waiting:
            table = self.tables[t]
            if self.synchronous and table.applied_round < round_ - 1:
                still.append((src, t, round_, idx))
                continue
            self.outbox.send(table.rows[idx], src, TAG_PS_REPLY)
        self._waiting = still

    def _marker(self, op: int, step: int) -> None:
        key = (op, step)
        self._markers[key] = self._markers.get(key, 0) + 1
        if self._markers[key] == len(self.clients) and op == OP_CHECKPOINT:
            del self._markers[key]
            assert self.spec.checkpoint_dir is not None
            rank = self.spec.ps_ranks()[self.shard]
            save_part(self.spec.checkpoint_dir, step, rank, {"rows": [t.rows for t in self.tables]})
