"""Parameter-server shards served inside the one stage process that uses them.

When a single-replica stage is the only client of the shards and runs on their machine
(assignment.in_process_shards), its client calls the shards (`heterps_core.ps.Shard`)
directly: no request, no reply, no second copy of the rows in another process. The rules
are the wire's (ps.py) with one client: a pull for round t finds round t-1 applied because
the client pushed it before, a push applies at once (async) or completes its round (sync:
one push per round). Each shard keeps its rank: it writes and reports its checkpoint part
under it, and its stats (rows held, bytes) go into the store under it, as a shard process's
would, so a checkpoint resumes in either layout.
"""

from __future__ import annotations

import json

import torch

from heterps_core import rendezvous as keys
from heterps_core.ps.shard import Shard
from heterps_core.runtime import sync
from heterps_core.runtime.checkpoint import load_part, save_part
from heterps_core.runtime.metrics import StoreLike
from heterps_core.runtime.ps import build_shard, shard_stats
from heterps_core.runtime.sealing import PartReports
from heterps_core.runtime.spec import JobSpec, RankSpec
from heterps_core.runtime.tables import TableRef


class InProcessShards:
    """The shards of `hosted` (every shard of the job, in shard order)."""

    def __init__(self, spec: JobSpec, hosted: list[RankSpec], refs: list[TableRef],
                 store: StoreLike) -> None:
        self.spec = spec
        self.ranks = [r.rank for r in hosted]
        self.store = store
        synchronous = sync.get(spec.train.sync).ps_synchronous
        self.shards: list[Shard] = [build_shard(spec, refs, synchronous) for _ in hosted]
        self.parts = [PartReports(store, rank, spec.attempt) for rank in self.ranks]
        self._pulled = [0 for _ in hosted]
        if spec.start_step > 0:
            assert spec.checkpoint_dir is not None
            for shard, rank in zip(self.shards, self.ranks, strict=True):
                shard.load_state_dict(load_part(spec.checkpoint_dir, spec.start_step, rank))

    def pull(self, shard: int, round_: int, parts: list[tuple[int, torch.Tensor]]
             ) -> list[torch.Tensor]:
        """The rows of every (table, ids) in `parts`, as of round `round_`."""
        server = self.shards[shard]
        for table, _ in parts:
            if not server.ready(table, round_):
                # On the wire this pull would wait for pushes that only this process sends.
                raise RuntimeError(f"in-process shard {shard}: table {table} is not ready for "
                                   f"round {round_} (a push of an earlier round is missing)")
        self._pulled[shard] += sum(ids.numel() for _, ids in parts)
        return server.pull_each(parts)  # one pass over every table

    def push(self, shard: int, round_: int,
             parts: list[tuple[int, torch.Tensor, torch.Tensor]]) -> None:
        """Every (table, ids, gradient rows) of round `round_` (empty parts count in sync)."""
        self.shards[shard].push_many(round_, parts)  # one pass over every table

    def checkpoint(self, step: int) -> None:
        """Every shard's part of step `step`, written and reported under its own rank."""
        assert self.spec.checkpoint_dir is not None
        for shard, rank, parts in zip(self.shards, self.ranks, self.parts, strict=True):
            parts.report(step, save_part(self.spec.checkpoint_dir, step, rank,
                                         shard.state_dict(step)))

    def report_stats(self) -> None:
        """What a shard process says at its end (rows held, bytes, rows pulled), per rank; no
        peak memory: the rows are in the host's."""
        for shard, rank, pulled in zip(self.shards, self.ranks, self._pulled, strict=True):
            self.store.set(keys.stats(rank), json.dumps(shard_stats(shard, pulled)))
