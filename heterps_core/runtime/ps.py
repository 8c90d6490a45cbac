"""The parameter server: one process per shard of the sparse embedding tables.

Row g of a table lives on shard g mod n, and exists there only once a stage has pulled or
pushed it (heterps_core/ps: `RowStore`, the id index and the optimiser state of the rows
touched). The shard applies the table's optimiser (SGD, Adagrad or Adam, lazy per row) to
the gradient rows stages push.

A pull or push is one request per stage, shard and mini-batch carrying every table of it
(tables.py: `request`), answered by one reply. Pushes are never acknowledged: messages from
one sender arrive in order, so a stage's pull always finds its own earlier pushes applied,
without a round trip. Replies to one stage go in the order of its requests. Synchronous
mode: the pushes of one round (one mini-batch per replica of the owning stage) are averaged
and applied as one update, and a pull for round t is answered only once round t-1 is
applied, so a run is repeatable and equals a plain loop with the same optimiser.
Asynchronous mode: pushes are applied as they arrive and pulls are answered at once (a
replica may read rows that miss another replica's latest update).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from heterps_core.ps.optim import parse
from heterps_core.ps.rowinit import FirstRows, RowInit, WeightRows
from heterps_core.ps.shard import Shard, TableSpec
from heterps_core.runtime.checkpoint import save_part
from heterps_core.runtime.sealing import PartReports
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.tables import (
    HEADER,
    OP_CHECKPOINT,
    OP_DONE,
    OP_PULL,
    OP_PUSH,
    TableRef,
    client_ranks,
    owning_stage,
    parse_request,
    sparse_tables,
)
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox
from heterps_core.zoo.base import ChainModel
from heterps_core.zoo.tables import init_of


def first_rows(ref: TableRef) -> FirstRows:
    """A zoo table's rows come from its seed; a user's model's table from its own weight."""
    init = init_of(ref.module)
    if init is not None:
        return RowInit(init.kind, init.scale, init.seed)
    return WeightRows(ref.weight)


def build_shard(spec: JobSpec, refs: list[TableRef], synchronous: bool) -> Shard:
    """One shard of every table in `refs` (all of the model's), empty: rows come as they
    are touched, or from a checkpoint (`Shard.load_state_dict`)."""
    tables = [
        TableSpec(
            dim=int(ref.weight.shape[1]),
            init=first_rows(ref),
            optimizer=parse(spec.train.table_optimizer(ref.table), f"table {ref.table}"),
            replicas=spec.stages[owning_stage(spec, ref)].units,
            evict_after=spec.train.evict_after,
        )
        for ref in refs
    ]
    return Shard(tables, synchronous, spec.start_step)


class ParameterServer:
    """One shard. `serve` runs until every client has said it is done."""

    def __init__(self, spec: JobSpec, shard: int, model: ChainModel, synchronous: bool,
                 parts: PartReports | None = None) -> None:
        self.spec = spec
        self.parts = parts  # tells the launcher of each checkpoint part written (sealing)
        self.shard_index = shard
        refs = sparse_tables(model)
        self.clients = client_ranks(spec, refs)
        self.dims = [int(ref.weight.shape[1]) for ref in refs]
        self.shard = build_shard(spec, refs, synchronous)
        # Pulls not answered yet: source, round, (table, ids) of each table asked for.
        self._waiting: list[tuple[int, int, list[tuple[int, torch.Tensor]]]] = []
        self._markers: dict[tuple[int, int], int] = {}
        self._done = 0
        self._pulled = 0  # rows sent in replies (what a stage's hot-row cache saves)
        self.outbox = Outbox()

    def load(self, state: dict[str, Any]) -> None:
        self.shard.load_state_dict(state)

    def serve(self) -> None:
        header = torch.empty(HEADER, dtype=torch.int64)
        while self._done < len(self.clients):
            src = dist.recv(header, None, tag=TAG_PS_REQUEST)
            op, n_tables, round_, n = (int(v) for v in header)
            if op == OP_PULL:
                payload = self._recv(src, torch.empty(2 * n_tables + n, dtype=torch.int64))
                self._waiting.append((src, round_, parse_request(payload, n_tables)))
            elif op == OP_PUSH:
                payload = self._recv(src, torch.empty(2 * n_tables + n, dtype=torch.int64))
                parts = parse_request(payload, n_tables)
                sizes = [ids.numel() * self.dims[t] for t, ids in parts]
                grads = self._recv(src, torch.empty(sum(sizes))).split(sizes)
                self.shard.push_many(round_, [  # one pass over every table
                    (t, ids, flat.view(ids.numel(), self.dims[t]))
                    for (t, ids), flat in zip(parts, grads, strict=True)])
            elif op == OP_CHECKPOINT:
                self._marker(OP_CHECKPOINT, round_)
            elif op == OP_DONE:
                self._done += 1
            self._answer_pulls()
            self.outbox.flush()

    def _recv(self, src: int, tensor: torch.Tensor) -> torch.Tensor:
        dist.recv(tensor, src, tag=TAG_PS_PAYLOAD)
        return tensor

    def _answer_pulls(self) -> None:
        still: list[tuple[int, int, list[tuple[int, torch.Tensor]]]] = []
        blocked: set[int] = set()  # a stage gets its replies in the order it asked
        for src, round_, parts in self._waiting:
            if src in blocked or not all(self.shard.ready(t, round_) for t, _ in parts):
                blocked.add(src)
                still.append((src, round_, parts))
                continue
            # One reply: every table's rows, flattened one after the other (one pass).
            self._pulled += sum(ids.numel() for _, ids in parts)
            self.outbox.send(self.shard.pull_many(parts), src, TAG_PS_REPLY)
        self._waiting = still

    def _marker(self, op: int, step: int) -> None:
        key = (op, step)
        self._markers[key] = self._markers.get(key, 0) + 1
        if self._markers[key] == len(self.clients) and op == OP_CHECKPOINT:
            del self._markers[key]
            assert self.spec.checkpoint_dir is not None
            rank = self.spec.ps_ranks()[self.shard_index]
            written = save_part(self.spec.checkpoint_dir, step, rank, self.shard.state_dict(step))
            if self.parts is not None:
                self.parts.report(step, written)

    def stats(self) -> dict[str, int]:
        """Rows held, the bytes of rows, optimiser state and index, rows pulled (for the run
        summary)."""
        return shard_stats(self.shard, self._pulled)


def shard_stats(shard: Shard, pulled: int) -> dict[str, int]:
    return {"rows_held": sum(shard.rows()), "table_bytes": shard.nbytes(), "rows_pulled": pulled}
