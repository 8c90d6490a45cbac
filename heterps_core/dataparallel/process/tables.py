"""The process backend's embedding tables: the server's `ps.Shard` and the rows it serves.

The server holds the embedding tables as one `ps.Shard` (rows.py): workers pull the rows
each step looks up and push their gradient rows, and the shard applies the optimiser to
those rows only. A pull for a round the (synchronous) shard has not reached yet waits here
until the pushes that complete it arrive. The server's own model (evaluation) looks its
rows up in the same shard.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from heterps_core.dataparallel.job import DataParallelRun
from heterps_core.dataparallel.process.messages import RowPull, RowPush, RowReply
from heterps_core.dataparallel.result import WorkerSummary
from heterps_core.dataparallel.rows import detach_tables
from heterps_core.ps import optim
from heterps_core.ps.shard import Shard
from heterps_core.zoo.base import ChainModel


class TableServer:
    """The tables taken out of `model`, served to the workers through `send(worker, message)`;
    the bytes of every pull and push are counted in the workers' `summaries`."""

    def __init__(self, run: DataParallelRun, model: ChainModel,
                 send: Callable[[int, object], None]) -> None:
        cfg = run.config
        # Collective modes keep the workers in step, and so the tables' updates (rows.py).
        synchronous = run.mode.collective
        specs = detach_tables(model, optim.create(cfg.optimizer, cfg.lr),
                              cfg.workers if synchronous else 1, self.fetch)
        self.shard = Shard(specs, synchronous)
        self.send = send
        self.waiting: list[RowPull] = []  # pulls for a round the shard has not reached

    def fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        """Rows for the server's own model (evaluation)."""
        return self.shard.pull(table, ids)

    def pull(self, pull: RowPull, summaries: list[WorkerSummary]) -> None:
        if not all(self.shard.ready(t, pull.round) for t in range(len(pull.ids))):
            self.waiting.append(pull)
            return
        # Every table's rows in one pass and one array: the shard's batched path (a table
        # set's lookup, gather over all of them), one buffer on the wire.
        parts = [(t, torch.from_numpy(ids)) for t, ids in enumerate(pull.ids)]
        reply = RowReply(self.shard.pull_many(parts).numpy())
        summary = summaries[pull.worker]
        summary.bytes_sent += pull.nbytes
        summary.bytes_received += reply.nbytes
        self.send(pull.worker, reply)

    def push(self, push: RowPush, summaries: list[WorkerSummary]) -> None:
        self.shard.push_many(push.round, [
            (t, torch.from_numpy(ids), torch.from_numpy(np.ascontiguousarray(grads)))
            for t, (ids, grads) in enumerate(zip(push.ids, push.grads, strict=True))])
        summaries[push.worker].bytes_sent += push.nbytes
        waiting, self.waiting = self.waiting, []
        for pull in waiting:
            self.pull(pull, summaries)
