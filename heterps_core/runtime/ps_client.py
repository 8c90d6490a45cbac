"""A stage's client of the parameter server: pulls rows before lookups, pushes sparse
gradients after the backward pass (see ps.py for the server and the two sync semantics)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from heterps_core.runtime.metrics import Clock
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.tables import OP_PULL, OP_PUSH, TableRef, header, owning_stage
from heterps_core.runtime.wire import TAG_PS_PAYLOAD, TAG_PS_REPLY, TAG_PS_REQUEST, Outbox


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
                header(OP_PULL, ref.table, self.round, local.numel()),
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
                    header(OP_PUSH, ref.table, round_, shard_idx.numel()),
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
            self.outbox.send(header(op, 0, step, 0), rank, TAG_PS_REQUEST)
        with self.clock.idle():
            self.outbox.flush()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
