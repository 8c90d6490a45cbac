"""One parameter-server shard's tables and the rules of when pushes apply and pulls answer.

No transport here: the runtime's server receives requests and calls `push`, asks
`ready` before answering a pull with `pull`, and checkpoints through `state_dict`.

Synchronous mode: the pushes of one round (one mini-batch from each of the `replicas`
writers of a table) are summed, scaled by 1/replicas and applied as one optimiser update;
a pull for round t is ready once round t-1 is applied. With one writer this is exactly a
plain loop's update per mini-batch.
Asynchronous mode: every push is one update as it arrives (scaled by 1/replicas), and every
pull is ready at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from heterps_core.ps.optim import SparseOptimizer
from heterps_core.ps.rowinit import FirstRows
from heterps_core.ps.store import RowStore


@dataclass(frozen=True)
class TableSpec:
    """What a shard needs to hold one table: row width, first values, optimiser, writers."""

    dim: int
    init: FirstRows
    optimizer: SparseOptimizer
    replicas: int = 1
    evict_after: int | None = None


@dataclass
class _Table:
    store: RowStore
    replicas: int
    applied_round: int
    pending: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = field(default_factory=dict)


class Shard:
    def __init__(self, tables: list[TableSpec], synchronous: bool, start_step: int = 0) -> None:
        self.synchronous = synchronous
        self.tables = [
            _Table(
                RowStore(t.dim, t.init, t.optimizer, evict_after=t.evict_after),
                t.replicas,
                start_step // t.replicas - 1,
            )
            for t in tables
        ]

    def ready(self, table: int, round_: int) -> bool:
        """May a pull for `round_` be answered now?"""
        return not self.synchronous or self.tables[table].applied_round >= round_ - 1

    def pull(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        return self.tables[table].store.pull(ids)

    def push(self, table: int, round_: int, ids: torch.Tensor, grads: torch.Tensor) -> None:
        """One writer's gradient rows of round `round_` (ids distinct within one push)."""
        t = self.tables[table]
        if not self.synchronous:
            t.store.push(ids, _scaled(grads, t.replicas), distinct=True)
            return
        t.pending.setdefault(round_, []).append((ids, grads))
        # Rounds complete in order: every writer pushes each round before its next pull.
        while len(t.pending.get(t.applied_round + 1, [])) == t.replicas:
            parts = t.pending.pop(t.applied_round + 1)
            if len(parts) == 1:
                t.store.push(parts[0][0], parts[0][1], distinct=True)
            else:
                ids_all = torch.cat([p[0] for p in parts])
                grads_all = _scaled(torch.cat([p[1] for p in parts]), t.replicas)
                t.store.push(ids_all, grads_all)
            t.applied_round += 1

    def rows(self) -> list[int]:
        return [t.store.rows for t in self.tables]

    def nbytes(self) -> int:
        return sum(t.store.nbytes for t in self.tables)

    def state_dict(self, step: int | None = None) -> dict[str, Any]:
        """Every table's rows, optimiser state and index as of the last applied round (of
        checkpoint `step`, when given). In sync mode a replica that is done with that round
        may already have pushed part of the next one before the last replica's checkpoint
        marker arrived: such a partial round is left out, since the resumed run computes
        and pushes it again."""
        for t in self.tables:
            if step is not None and self.synchronous:
                assert t.applied_round == step // t.replicas - 1, (
                    f"checkpoint at step {step}: round {t.applied_round} applied")
            assert all(r > t.applied_round for r in t.pending), "an applied round is pending"
        return {"tables": [t.store.state_dict() for t in self.tables]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for t, saved in zip(self.tables, state["tables"], strict=True):
            t.store.load_state_dict(saved)


def _scaled(grads: torch.Tensor, replicas: int) -> torch.Tensor:
    return grads if replicas == 1 else grads * (1.0 / replicas)
