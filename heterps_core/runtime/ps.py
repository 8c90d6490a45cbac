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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from heterps_core.runtime.checkpoint import save_part
from heterps_core.runtime.metrics import Clock
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox
from heterps_core.zoo.base import ChainModel
from heterps_core.zoo.tables import shard_rows

OP_PULL, OP_PUSH, OP_CHECKPOINT, OP_DONE = 1, 2, 3, 4
# Updates scale the values first: index_add_ with `alpha` takes a slow per-row path on the
# CPU (about 12x slower for a mini-batch's rows in torch 2.13).
_HEADER = 4  # op, table, round (or step), rows


@dataclass(frozen=True)
class TableRef:
    """Table `table` of the model: module `path` inside layer `layer`."""

    table: int
    layer: int
    path: str
    module: nn.Module

    @property
    def weight(self) -> torch.Tensor:
        weight = self.module.weight
        assert isinstance(weight, torch.Tensor)
        return weight


def sparse_tables(model: ChainModel) -> list[TableRef]:
    """Every sparse embedding table of the model's embedding layers, in a fixed order."""
    refs: list[TableRef] = []
    for li, layer in enumerate(model.layers):
        if not getattr(layer, "is_sparse", False):
            continue
        for path, module in layer.named_modules():
            if isinstance(module, nn.Embedding | nn.EmbeddingBag) and module.sparse:
                refs.append(TableRef(len(refs), li, path, module))
    return refs


def owning_stage(spec: JobSpec, ref: TableRef) -> int:
    return next(s for s, st in enumerate(spec.stages) if st.first <= ref.layer <= st.last)


def client_ranks(spec: JobSpec, refs: list[TableRef]) -> list[int]:
    stages = sorted({owning_stage(spec, ref) for ref in refs})
    return [rank for s in stages for rank in spec.stage_ranks(s)]


def _header(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


# --- server ---------------------------------------------------------------------------------


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
        header = torch.empty(_HEADER, dtype=torch.int64)
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


# --- client ---------------------------------------------------------------------------------


class _AllPulled(Exception):
    """Ends a prefetch forward pass early: nothing after the last lookup is needed."""


class PSClient:
    """A stage's view of the parameter server for the tables its layers hold."""

    def __init__(self, spec: JobSpec, refs: list[TableRef], clock: Clock) -> None:
        self.ps = spec.ps_ranks()
        self.refs = refs
        self.clock = clock
        self.round = 0
        # A stage with one replica is the only writer of its tables: applying its own
        # updates locally keeps every row it holds current, so it need not pull them back
        # (the PS still gets every push, for checkpoints). Rows start current on a fresh run
        # (stage and PS build the same seeded model) and stale after a resume.
        self.sole_writer = bool(refs) and spec.stages[owning_stage(spec, refs[0])].units == 1
        self.lr = spec.train.lr
        current = self.sole_writer and spec.start_step == 0
        self._all_current = current
        self._fresh = [
            torch.full((ref.weight.shape[0],), current, dtype=torch.bool) for ref in refs
        ]
        self._collecting: set[int] | None = None  # tables pulled so far by `prefetch`
        # Sparse gradients (rows, values) taken from the tables since the last push.
        self._absorbed: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in refs]
        self.outbox = Outbox()
        self._hooks = [
            ref.module.register_forward_pre_hook(self._make_hook(i)) for i, ref in enumerate(refs)
        ]

    def begin(self, round_: int) -> None:
        """A new mini-batch: every row must be pulled again before it is read."""
        self.round = round_
        if self.sole_writer:
            return
        for fresh in self._fresh:
            fresh.zero_()

    def prefetch(self, forward: Callable[[], object]) -> None:
        """Pull the rows a whole mini-batch reads, one round trip per table and shard.

        `forward` runs the stage on the whole mini-batch; it is cut short once every table
        has been pulled. Its micro-batches then find their rows fresh, so the round trips
        (and the wait for the previous round's update) leave the micro-batch loop.
        """
        if self._all_current:
            return
        self._collecting = set()
        try:
            with torch.no_grad():
                forward()
        except _AllPulled:
            pass
        finally:
            self._collecting = None

    def _make_hook(self, i: int) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
            self.pull(i, args[0])
            if self._collecting is not None:
                self._collecting.add(i)
                if len(self._collecting) == len(self.refs):
                    raise _AllPulled

        return hook

    def _by_shard(self, idx: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        n = len(self.ps)
        if n == 1:  # the common case: no masks, no copies
            yield 0, idx, idx
            return
        shard_of = idx % n
        for shard in range(n):
            mask = shard_of == shard
            if bool(mask.any()):
                yield shard, idx[mask], idx[mask] // n

    def pull(self, i: int, indices: torch.Tensor) -> None:
        if self._all_current:
            return
        ref = self.refs[i]
        idx = indices.detach().reshape(-1).to("cpu").unique()
        idx = idx[~self._fresh[i][idx]]
        if idx.numel() == 0:
            return
        weight = ref.weight
        parts = list(self._by_shard(idx))
        for shard, _, local in parts:
            self.outbox.send(
                _header(OP_PULL, ref.table, self.round, local.numel()),
                self.ps[shard],
                TAG_PS_REQUEST,
            )
            self.outbox.send(local, self.ps[shard], TAG_PS_PAYLOAD)
        with self.clock.idle():
            for shard, rows, _ in parts:
                values = torch.empty(rows.numel(), weight.shape[1], dtype=weight.dtype)
                dist.recv(values, self.ps[shard], tag=TAG_PS_REPLY)
                weight.data[rows.to(weight.device)] = values.to(weight.device)
            self.outbox.flush()
        self._fresh[i][idx] = True

    def absorb(self) -> None:
        """Take the sparse gradients of the backward passes so far; a sole writer applies them.

        Called after each micro-batch's backward pass, once every forward pass of the
        mini-batch is done: an embedding's backward pass never reads its table, so updating
        rows early changes nothing for the rest of the mini-batch, and the next mini-batch's
        forward pass, which must wait for the whole update (bsp), finds less of it left.
        Applying the pieces in order adds the same values in the same order as one update of
        the whole mini-batch, as the server does.
        """
        for ref, absorbed in zip(self.refs, self._absorbed, strict=True):
            grad = ref.weight.grad
            if grad is None:
                continue
            # Uncoalesced rows are fine: the server's index_add_ sums duplicates, and
            # coalescing (a sort) would cost more than sending the repeats.
            grad = grad if grad.is_sparse else grad.to_sparse()
            idx, values = grad._indices()[0], grad._values()
            if self.sole_writer:
                ref.weight.data.index_add_(0, idx, values * -self.lr)
            absorbed.append((idx.to("cpu"), values.to("cpu")))
            ref.weight.grad = None

    def push(self, round_: int) -> None:
        """Send every table's sparse gradient of round `round_` (empty ones too: they count)."""
        self.absorb()
        with self.clock.idle():
            self.outbox.flush()  # the previous push must have left before its buffers go
        for ref, absorbed in zip(self.refs, self._absorbed, strict=True):
            weight = ref.weight
            if len(absorbed) == 1:  # one micro-batch: nothing to join
                idx, values = absorbed[0]
            elif absorbed:
                idx = torch.cat([rows for rows, _ in absorbed])
                values = torch.cat([vals for _, vals in absorbed])
            else:
                idx = torch.empty(0, dtype=torch.int64)
                values = torch.empty(0, weight.shape[1], dtype=weight.dtype)
            absorbed.clear()
            for shard, shard_idx, shard_values in self._split_push(idx, values):
                self.outbox.send(
                    _header(OP_PUSH, ref.table, round_, shard_idx.numel()),
                    self.ps[shard],
                    TAG_PS_REQUEST,
                )
                self.outbox.send(shard_idx, self.ps[shard], TAG_PS_PAYLOAD)
                self.outbox.send(shard_values, self.ps[shard], TAG_PS_PAYLOAD)

    def _split_push(
        self, idx: torch.Tensor, values: torch.Tensor
    ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        """(shard, shard-local rows, values) for every shard, empty parts included."""
        n = len(self.ps)
        if n == 1:
            yield 0, idx, values
            return
        for shard in range(n):
            mask = idx % n == shard
            yield shard, idx[mask] // n, values[mask]

    def marker(self, op: int, step: int) -> None:
        for rank in self.ps:
            self.outbox.send(_header(op, 0, step, 0), rank, TAG_PS_REQUEST)
        with self.clock.idle():
            self.outbox.flush()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
