"""A stage's client of the parameter server (see ps.py for the server and the sync rules).

The stage holds no table: each sparse table of its layers is a `RemoteTable` (ps/remote.py)
that looks up in the rows of the current mini-batch only. Per mini-batch the client
collects the ids every table will look up (a no-grad pass cut short after the last lookup),
pulls their distinct rows in one request per table and shard, and after the backward passes
pushes one gradient row per distinct row. Row g of a table lives on shard g mod n; ids on
the wire are global row ids (the server draws a new row's first value from it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist

from heterps_core.ps.remote import BatchRows, RemoteTable, collect_ids, replace_table
from heterps_core.runtime.metrics import Clock
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.tables import OP_PULL, OP_PUSH, TableRef, header
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox
from heterps_core.zoo.base import ChainModel


class PSClient:
    def __init__(self, spec: JobSpec, refs: list[TableRef], model: ChainModel, clock: Clock,
                 device: torch.device) -> None:
        self.ps = spec.ps_ranks()
        self.refs = refs
        self.clock = clock
        self.device = device
        self.outbox = Outbox()
        self.tables: list[RemoteTable] = [
            replace_table(model.layers[ref.layer], ref.path, ref.table, self._fetch)
            for ref in refs
        ]
        self.dims = [int(ref.weight.shape[1]) for ref in refs]
        self._round = 0

    def begin(self, round_: int, forward: Callable[[], object]) -> list[BatchRows]:
        """Pull the rows mini-batch `round_` reads (`forward` runs the stage on all of it)."""
        self._round = round_
        looked_up = collect_ids(self.tables, forward)
        distinct = [BatchRows.of(ids) for ids in looked_up]
        values = self._pull([ids for ids, _ in distinct], round_)
        rows = [
            BatchRows(ids, v.to(self.device), inverse)
            for (ids, inverse), v in zip(distinct, values, strict=True)
        ]
        for table, batch_rows in zip(self.tables, rows, strict=True):
            table.begin(batch_rows)
        return rows

    def _fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        """A lookup the prefetch did not foresee (a table looked up without `begin`)."""
        wanted: list[torch.Tensor] = [torch.empty(0, dtype=torch.int64) for _ in self.refs]
        wanted[table] = ids
        return self._pull(wanted, self._round)[table].to(self.device)

    def _by_shard(
        self, ids: torch.Tensor
    ) -> Iterator[tuple[int, torch.Tensor | None, torch.Tensor]]:
        """(shard, positions in `ids` or None for all, ids) of every shard's part."""
        n = len(self.ps)
        if n == 1:
            yield 0, None, ids
            return
        shard_of = ids % n
        for shard in range(n):
            where = (shard_of == shard).nonzero().squeeze(1)
            yield shard, where, ids[where]

    def _pull(self, wanted: list[torch.Tensor], round_: int) -> list[torch.Tensor]:
        """Rows of every table's `wanted` ids: all requests out first, then every reply."""
        out: list[torch.Tensor] = []
        replies: list[tuple[int, int, torch.Tensor | None, torch.Tensor]] = []
        for t, ids in enumerate(wanted):
            ref = self.refs[t]
            dim = self.dims[t]
            out.append(torch.empty(ids.numel(), dim, dtype=torch.float32))
            for shard, where, part in self._by_shard(ids):
                if part.numel() == 0:
                    continue
                self.outbox.send(header(OP_PULL, ref.table, round_, part.numel()),
                                 self.ps[shard], TAG_PS_REQUEST)
                self.outbox.send(part, self.ps[shard], TAG_PS_PAYLOAD)
                # One shard's reply lands straight in the block; several are placed after.
                buffer = out[t] if where is None else torch.empty(part.numel(), dim)
                replies.append((t, shard, where, buffer))
        with self.clock.idle():
            for t, shard, where, buffer in replies:
                dist.recv(buffer, self.ps[shard], tag=TAG_PS_REPLY)
                if where is not None:
                    out[t][where] = buffer
            self.outbox.flush()
        return out

    def push(self, round_: int, rows: list[BatchRows]) -> None:
        """Send every table's gradient rows of round `round_` (empty parts too: they count)."""
        with self.clock.idle():
            self.outbox.flush()  # the previous push must have left before its buffers go
        for ref, batch_rows in zip(self.refs, rows, strict=True):
            grad = batch_rows.gradient().detach().to("cpu")
            for shard, where, part in self._by_shard(batch_rows.ids):
                values = grad if where is None else grad[where]
                self.outbox.send(header(OP_PUSH, ref.table, round_, part.numel()),
                                 self.ps[shard], TAG_PS_REQUEST)
                self.outbox.send(part, self.ps[shard], TAG_PS_PAYLOAD)
                self.outbox.send(values.contiguous(), self.ps[shard], TAG_PS_PAYLOAD)

    def marker(self, op: int, step: int) -> None:
        for rank in self.ps:
            self.outbox.send(header(op, 0, step, 0), rank, TAG_PS_REQUEST)
        with self.clock.idle():
            self.outbox.flush()

    def close(self) -> None:
        with self.clock.idle():
            self.outbox.flush()
