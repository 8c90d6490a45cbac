"""One parameter-server shard's tables and the rules of when pushes apply and pulls answer.

No transport here: the runtime's server receives requests and calls `push`, asks
`ready` before answering a pull with `pull`, and checkpoints through `state_dict`.

Synchronous mode: the pushes of one round (one mini-batch from each of the `replicas`
writers of a table) are summed, scaled by 1/replicas and applied as one optimiser update;
a pull for round t is ready once round t-1 is applied. With one writer this is exactly a
plain loop's update per mini-batch.
Asynchronous mode: every push is one update as it arrives (scaled by 1/replicas), and every
pull is ready at once.

`pull_many` and `push_many` take a whole message (every table a stage asks for or pushes):
tables of one row width, optimiser and eviction setting form one `TableSet`, served in one
pass per message; `pull` and `push` are the same for one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from heterps_core.ps.optim import SparseOptimizer
from heterps_core.ps.rowinit import FirstRows
from heterps_core.ps.store import MAX_TABLES, RowStore
from heterps_core.ps.tableset import TableSet


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
    tables: TableSet  # the set this table is served with
    local: int  # its number within the set
    replicas: int
    applied_round: int
    pending: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = field(default_factory=dict)

    @property
    def store(self) -> RowStore:
        return self.tables.stores[self.local]


class Shard:
    def __init__(self, tables: list[TableSpec], synchronous: bool, start_step: int = 0) -> None:
        self.synchronous = synchronous
        self.sets: list[TableSet] = []
        self.tables: list[_Table] = []
        for members in _layouts(tables):
            first = tables[members[0]]
            inits = [tables[t].init for t in members]
            self.sets.append(TableSet(first.dim, inits, first.optimizer, first.evict_after))
        where = {t: (s, local) for s, members in enumerate(_layouts(tables))
                 for local, t in enumerate(members)}
        for t, spec in enumerate(tables):
            s, local = where[t]
            self.tables.append(_Table(self.sets[s], local, spec.replicas,
                                      start_step // spec.replicas - 1))

    def ready(self, table: int, round_: int) -> bool:
        """May a pull for `round_` be answered now?"""
        return not self.synchronous or self.tables[table].applied_round >= round_ - 1

    def pull(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        """Rows [len(ids), dim] of one table."""
        t = self.tables[table]
        return t.tables.pull([(t.local, ids)])

    def pull_many(self, parts: Sequence[tuple[int, torch.Tensor]]) -> torch.Tensor:
        """The rows of every (table, ids) of a message, flattened one table after the other
        (a pull's reply)."""
        groups = self._by_set([(t, ids, None) for t, ids in parts])
        if not groups:
            return torch.empty(0)
        if len(groups) == 1:
            (tables, members), = groups.items()
            return tables.pull([(self.tables[t].local, ids) for t, ids, _ in members]).view(-1)
        rows: dict[int, torch.Tensor] = {}
        for tables, members in groups.items():
            got = tables.pull([(self.tables[t].local, ids) for t, ids, _ in members])
            sizes = [ids.numel() for _, ids, _ in members]
            for (t, _, _), part in zip(members, got.split(sizes), strict=True):
                rows[t] = part.reshape(-1)
        return torch.cat([rows[t] for t, _ in parts])

    def pull_each(self, parts: Sequence[tuple[int, torch.Tensor]]) -> list[torch.Tensor]:
        """`pull_many`'s rows as one [len(ids), dim] view per (table, ids)."""
        dims = [self.tables[t].store.dim for t, _ in parts]
        flat = self.pull_many(parts)
        chunks = flat.split([ids.numel() * dim for (_, ids), dim in zip(parts, dims, strict=True)])
        return [c.view(ids.numel(), dim) for c, (_, ids), dim in zip(chunks, parts, dims,
                                                                      strict=True)]

    def push(self, table: int, round_: int, ids: torch.Tensor, grads: torch.Tensor) -> None:
        """One writer's gradient rows of round `round_` (ids distinct within one push)."""
        self.push_many(round_, [(table, ids, grads)])

    def push_many(
        self, round_: int, parts: Sequence[tuple[int, torch.Tensor, torch.Tensor]]
    ) -> None:
        """One writer's gradient rows of round `round_` for every (table, ids, grads) of a
        message (ids distinct within a table)."""
        if not self.synchronous:
            self._apply([(t, ids, _scaled(g, self.tables[t].replicas)) for t, ids, g in parts],
                        distinct=True)
            return
        for number, ids, grads in parts:
            self.tables[number].pending.setdefault(round_, []).append((ids, grads))
        # Rounds complete in order: every writer pushes each round before its next pull.
        while True:
            whole: list[tuple[int, torch.Tensor, torch.Tensor]] = []  # one writer: distinct
            summed: list[tuple[int, torch.Tensor, torch.Tensor]] = []
            for number, t in enumerate(self.tables):
                if len(t.pending.get(t.applied_round + 1, [])) != t.replicas:
                    continue
                done = t.pending.pop(t.applied_round + 1)
                t.applied_round += 1
                if len(done) == 1:
                    whole.append((number, *done[0]))
                else:
                    summed.append((number, torch.cat([p[0] for p in done]),
                                   _scaled(torch.cat([p[1] for p in done]), t.replicas)))
            if not whole and not summed:
                return
            self._apply(whole, distinct=True)
            self._apply(summed, distinct=False)

    def _apply(self, parts: list[tuple[int, torch.Tensor, torch.Tensor]], distinct: bool) -> None:
        for tables, members in self._by_set(parts).items():
            tables.push([(self.tables[t].local, ids, g) for t, ids, g in members], distinct)

    def _by_set(
        self, parts: Sequence[tuple[int, torch.Tensor, Any]]
    ) -> dict[TableSet, list[tuple[int, torch.Tensor, Any]]]:
        groups: dict[TableSet, list[tuple[int, torch.Tensor, Any]]] = {}
        for part in parts:
            groups.setdefault(self.tables[part[0]].tables, []).append(part)
        return groups

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


def _layouts(tables: list[TableSpec]) -> list[list[int]]:
    """The tables (by number) served together: same width, optimiser and eviction."""
    groups: dict[tuple[Any, ...], list[list[int]]] = {}
    for t, spec in enumerate(tables):
        key = (spec.dim, repr(spec.optimizer.config()), spec.evict_after)
        sets = groups.setdefault(key, [[]])
        if len(sets[-1]) == MAX_TABLES:
            sets.append([])
        sets[-1].append(t)
    return [members for sets in groups.values() for members in sets]


def _scaled(grads: torch.Tensor, replicas: int) -> torch.Tensor:
    return grads if replicas == 1 else grads * (1.0 / replicas)
