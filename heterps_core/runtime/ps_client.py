"""A stage's client of the parameter server (see ps.py for the server and the sync rules).

The stage holds no table: each sparse table of its layers is a `RemoteTable` (ps/remote.py)
that looks up in the rows of the current mini-batch only. Per mini-batch the client
collects the ids every table will look up (a no-grad pass cut short after the last lookup),
pulls their distinct rows in one request per shard carrying every table, and after the
backward passes pushes one gradient row per distinct row, again one message per shard. Row
g of a table lives on shard g mod n; ids on the wire are global row ids (the server draws a
new row's first value from it). When the shards are served in this process
(ps_inprocess.py), the same calls go to them directly instead of over the wire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from heterps_core.ps.cache import RowCache
from heterps_core.ps.remote import BatchRows, RemoteTable, collect_rows, replace_table
from heterps_core.runtime.metrics import Clock
from heterps_core.runtime.ps_inprocess import InProcessShards
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.tables import (
    OP_CHECKPOINT,
    OP_PULL,
    OP_PUSH,
    TableRef,
    header,
    request,
)
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox
from heterps_core.zoo.base import ChainModel

# Per shard, per table: (positions in the table's wanted ids or None for all, the ids).
_Parts = list[tuple[torch.Tensor | None, torch.Tensor]]


@dataclass
class _Pull:
    """A pull under way: every table's rows (`out`, filled as replies come), the replies
    still to wait for."""

    out: list[torch.Tensor]
    replies: list[tuple[dist.Work, torch.Tensor, _Parts]]

    def place(self, t: int, where: torch.Tensor | None, part: torch.Tensor,
              rows: torch.Tensor) -> None:
        if where is None:
            self.out[t] = rows  # one shard: the reply is the block, no copy
        elif part.numel():
            self.out[t][where] = rows


class PSClient:
    def __init__(self, spec: JobSpec, refs: list[TableRef], model: ChainModel, clock: Clock,
                 device: torch.device, local: InProcessShards | None = None) -> None:
        self.ps = spec.ps_ranks()
        self.local = local  # the shards, when this process serves them (else over the wire)
        self.refs = refs
        self.clock = clock
        self.device = device
        self.outbox = Outbox()
        self.tables: list[RemoteTable] = [
            replace_table(model.layers[ref.layer], ref.path, ref.table, self._fetch)
            for ref in refs
        ]
        self.dims = [int(ref.weight.shape[1]) for ref in refs]
        self.numbers = [ref.table for ref in refs]  # the model's numbers of this stage's tables
        self._round = 0
        self._ahead: tuple[int, list[tuple[torch.Tensor, torch.Tensor]], _Pull] | None = None
        train = spec.train
        self.caches = [
            RowCache(dim, train.cache_rows, train.cache_staleness) for dim in self.dims
        ] if train.cache_rows else []

    def prefetch(self, round_: int, forward: Callable[[], object]) -> None:
        """Ask the shards for the rows mini-batch `round_` reads now, while this one's
        backward pass and updates still run; its `begin` takes them. Over the wire only
        and without hot-row caches; either sync mode: a synchronous shard holds the reply
        until this replica's earlier round is applied (messages from one sender arrive in
        order), so the rows are those a later pull would get."""
        if self.local is not None or self.caches:
            return
        distinct = collect_rows(self.tables, forward)
        self._ahead = (round_, distinct, self._request([ids for ids, _ in distinct], round_))

    def begin(self, round_: int, forward: Callable[[], object],
              training: bool = True) -> list[BatchRows]:
        """Pull the rows mini-batch `round_` reads (`forward` runs the stage on all of it),
        or take those `prefetch` asked for; with hot-row caches, only those the caches do
        not hold fresh enough. An evaluation's pull (not `training`) uses neither."""
        self._round = round_
        if training and self._ahead is not None:
            ahead, distinct, pull = self._ahead
            self._ahead = None
            assert ahead == round_, f"prefetched round {ahead}, began {round_}"
            values = self._receive(pull)
        else:
            distinct = collect_rows(self.tables, forward)
            if self.caches and training:
                values = self._pull_cached(distinct, round_)
            else:
                values = self._pull([ids for ids, _ in distinct], round_)
        rows = [
            BatchRows(ids, v.to(self.device), inverse)
            for (ids, inverse), v in zip(distinct, values, strict=True)
        ]
        for table, batch_rows in zip(self.tables, rows, strict=True):
            table.begin(batch_rows)
        return rows

    def _pull_cached(self, distinct: list[tuple[torch.Tensor, torch.Tensor]],
                     round_: int) -> list[torch.Tensor]:
        """Every table's rows, from its cache where it holds them within the staleness
        bound (ps/cache.py), pulled otherwise; a refresh round pulls all and refills."""
        found = [cache.lookup(ids, round_) for cache, (ids, _) in zip(self.caches, distinct,
                                                                      strict=True)]
        missed = self._pull([ids[~hit] for (ids, _), (hit, _) in zip(distinct, found,
                                                                     strict=True)], round_)
        values = []
        for cache, (ids, inverse), (hit, rows), pulled in zip(
            self.caches, distinct, found, missed, strict=True
        ):
            if cache.expired(round_):
                cache.refresh(ids, pulled, inverse, round_)
                values.append(pulled)
                continue
            block = torch.empty(ids.numel(), cache.dim)
            block[hit] = rows
            block[~hit] = pulled
            values.append(block)
        return values

    def _fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        """A lookup the prefetch did not foresee (a table looked up without `begin`)."""
        wanted: list[torch.Tensor] = [torch.empty(0, dtype=torch.int64) for _ in self.refs]
        at = self.numbers.index(table)  # `table` is the model's number of the table
        wanted[at] = ids
        return self._pull(wanted, self._round)[at].to(self.device)

    def _by_shard(self, wanted: list[torch.Tensor]) -> list[list[tuple[torch.Tensor | None,
                                                                         torch.Tensor]]]:
        """Per shard, per table: (positions in the table's `wanted` ids or None for all, the
        ids that shard holds)."""
        n = len(self.ps)
        if n == 1:
            return [[(None, ids) for ids in wanted]]
        split: list[list[tuple[torch.Tensor | None, torch.Tensor]]] = [[] for _ in range(n)]
        for ids in wanted:
            shard_of = ids % n
            for shard in range(n):
                where = (shard_of == shard).nonzero().squeeze(1)
                split[shard].append((where, ids[where]))
        return split

    def _pull(self, wanted: list[torch.Tensor], round_: int) -> list[torch.Tensor]:
        """Rows of every table's `wanted` ids: one request per shard with every table's
        ids, all out first, then every reply (one flat block per shard)."""
        return self._receive(self._request(wanted, round_))

    def _request(self, wanted: list[torch.Tensor], round_: int) -> _Pull:
        """Send the requests of a pull and post the receives of their replies (gloo matches
        receives in the order they were posted, so a later pull cannot take these replies);
        shards in this process answer at once."""
        pull = _Pull([torch.empty(ids.numel(), dim)
                      for ids, dim in zip(wanted, self.dims, strict=True)], [])
        for shard, parts in enumerate(self._by_shard(wanted)):
            total = sum(part.numel() for _, part in parts)
            if total == 0:
                continue
            if self.local is not None:
                got = self.local.pull(shard, round_, [
                    (number, part) for number, (_, part) in zip(self.numbers, parts, strict=True)
                ])
                for t, ((where, part), rows) in enumerate(zip(parts, got, strict=True)):
                    pull.place(t, where, part, rows)
                continue
            ids = [part for _, part in parts]
            self.outbox.send(header(OP_PULL, len(ids), round_, total), self.ps[shard],
                             TAG_PS_REQUEST)
            self.outbox.send(request(self.numbers, ids), self.ps[shard], TAG_PS_PAYLOAD)
            buffer = torch.empty(sum(part.numel() * dim
                                     for part, dim in zip(ids, self.dims, strict=True)))
            work = dist.irecv(buffer, self.ps[shard], tag=TAG_PS_REPLY)
            assert work is not None  # only None for ranks outside the group
            pull.replies.append((work, buffer, parts))
        return pull

    def _receive(self, pull: _Pull) -> list[torch.Tensor]:
        """Every table's rows once the replies of `pull` are in."""
        # Busy, not idle: the round trip is the stage's own row wait, part of its time per
        # mini-batch in the cost model (docs/cost-model.md), and no other stage's work hides it.
        for work, buffer, parts in pull.replies:
            work.wait()
            offset = 0
            for t, (where, part) in enumerate(parts):
                size = part.numel() * self.dims[t]
                pull.place(t, where, part, buffer[offset : offset + size].view(part.numel(),
                                                                               self.dims[t]))
                offset += size
        self.outbox.flush()
        return pull.out

    def push(self, round_: int, rows: list[BatchRows]) -> None:
        """Send every table's gradient rows of round `round_`: one push per shard carrying
        every table (empty parts too: in sync mode they count for the round)."""
        self.outbox.flush()  # the previous push must have left before its buffers go (busy)
        grads = [batch_rows.gradient().detach().to("cpu") for batch_rows in rows]
        for shard, parts in enumerate(self._by_shard([r.ids for r in rows])):
            ids = [part for _, part in parts]
            if self.local is not None:
                self.local.push(shard, round_, [
                    (number, part, grad if where is None else grad[where])
                    for number, grad, (where, part) in zip(self.numbers, grads, parts,
                                                           strict=True)
                ])
                continue
            values = [
                (grad if where is None else grad[where]).reshape(-1)
                for grad, (where, _) in zip(grads, parts, strict=True)
            ]
            total = sum(part.numel() for part in ids)
            self.outbox.send(header(OP_PUSH, len(ids), round_, total), self.ps[shard],
                             TAG_PS_REQUEST)
            self.outbox.send(request(self.numbers, ids), self.ps[shard], TAG_PS_PAYLOAD)
            self.outbox.send(torch.cat(values) if len(values) > 1 else values[0].contiguous(),
                             self.ps[shard], TAG_PS_PAYLOAD)

    def marker(self, op: int, step: int) -> None:
        if self.local is not None:
            if op == OP_CHECKPOINT:
                self.local.checkpoint(step)
            return
        for rank in self.ps:
            self.outbox.send(header(op, 0, step, 0), rank, TAG_PS_REQUEST)
        with self.clock.idle():
            self.outbox.flush()

    def close(self) -> None:
        with self.clock.idle():
            self.outbox.flush()
