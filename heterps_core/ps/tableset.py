"""The tables of one shard that share a row layout and an optimiser, served one message at a time.

A message (one stage's pull or push for a mini-batch) carries ids for many tables: CTR-DNN
sends about 500 distinct rows for each of its 26. Served table by table, every step is a few
dozen numpy and torch calls per table, and at that size the calls, not the rows, take the
time. Here a message is one pass: one index lookup (the tables share one `RowIndex`, each key
tagged with its table), one call making the new rows of every table (`RowInit` tables of one
kind and scale differ only by seed), one gather into a block, one optimiser update and one
scatter back. Each table keeps its own arena, slots, step count and checkpoint (`RowStore`),
so the gather and scatter are one index op per table into views of the block.

A push comes back with the ids its pull asked for, so it takes the slots that pull looked up
(`_Pulled`) instead of a second hash pass, as long as no row has changed slots since.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from heterps_core.ps.index import RowIndex, distinct
from heterps_core.ps.optim import SparseOptimizer
from heterps_core.ps.rowinit import FirstRows, RowInit, seed_of, seeded_rows
from heterps_core.ps.store import MAX_TABLES, TABLE_SHIFT, RowStore

_ID_MASK = np.int64((1 << TABLE_SHIFT) - 1)

# (store, start, stop): a table's rows within a message's flat arrays.
Segment = tuple[RowStore, int, int]

# Pulls whose slots a push may reuse: a pipeline has a few mini-batches in flight.
RECENT_PULLS = 8


@dataclass(frozen=True, eq=False)  # compared by identity: `deque.remove`
class _Pulled:
    keys: np.ndarray
    slots: torch.Tensor
    generation: int  # the stores' generations summed when it was looked up


class TableSet:
    """Tables 0..len(inits)-1 of one row width, optimiser and eviction setting."""

    def __init__(
        self,
        dim: int,
        inits: list[FirstRows],
        optimizer: SparseOptimizer,
        evict_after: int | None = None,
    ) -> None:
        if len(inits) > MAX_TABLES:
            raise ValueError(f"a table set holds at most {MAX_TABLES} tables, got {len(inits)}")
        self.dim = dim
        self.optimizer = optimizer
        self.index = RowIndex()
        self.stores = [
            RowStore(dim, init, optimizer, evict_after, index=self.index, table=t)
            for t, init in enumerate(inits)
        ]
        self.width = self.stores[0].width if self.stores else dim
        self._tags = np.array([s.tag for s in self.stores], dtype=np.int64)
        self._block = torch.empty(0, self.width)  # a push's rows and state, reused
        self._pulled: deque[_Pulled] = deque(maxlen=RECENT_PULLS)

    def pull(self, parts: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
        """Rows [sum of len(ids), dim] of every (table, ids) in `parts`, one after the other."""
        keys, segments = self._keys([(t, ids) for t, ids in parts])
        slots = self._slots(keys, segments)
        self._pulled.append(_Pulled(keys, slots, self._generation()))
        out = torch.empty(keys.size, self.dim)
        rows = slice(0, self.dim)
        for store, a, b in segments:
            if b > a:
                store.arena.gather(slots[a:b], rows, out=out[a:b])
        return out

    def push(self, parts: list[tuple[int, torch.Tensor, torch.Tensor]], distinct: bool) -> None:
        """One optimiser update of each table in `parts` with its gradient rows.

        Ids repeated within a table are summed first unless the caller says they are
        `distinct`. Every table listed counts an update, even with no rows.
        """
        for t, _, _ in parts:
            self.stores[t].steps += 1
        keys, segments = self._keys([(t, ids) for t, ids, _ in parts])
        if keys.size:
            grads = torch.cat([g for _, _, g in parts]) if len(parts) > 1 else parts[0][2]
            grads = grads.reshape(keys.size, self.dim)
            if not distinct:
                keys, grads, segments = self._summed(keys, grads)
            self._update(keys, grads.to(self._block.dtype), segments)
        for t, _, _ in parts:
            self.stores[t].evict_due()

    # --- one pass ------------------------------------------------------------------------

    def _keys(self, parts: list[tuple[int, torch.Tensor]]) -> tuple[np.ndarray, list[Segment]]:
        """The tagged index keys of a message's ids, and where each table's are."""
        arrays, segments, at = [], [], 0
        for t, ids in parts:
            flat = ids.detach().reshape(-1).to("cpu", torch.int64).numpy()
            arrays.append(flat)
            segments.append((self.stores[t], at, at + flat.size))
            at += flat.size
        keys = np.concatenate(arrays) if len(arrays) != 1 else arrays[0].copy()
        if (keys >> TABLE_SHIFT).any():  # negative ids too (the shift keeps the sign)
            raise ValueError(f"row ids must be within [0, 2**{TABLE_SHIFT})")
        lengths = [b - a for _, a, b in segments]
        keys |= np.repeat(self._tags[[t for t, _ in parts]], lengths)
        return keys, segments

    def _summed(
        self, keys: np.ndarray, grads: torch.Tensor
    ) -> tuple[np.ndarray, torch.Tensor, list[Segment]]:
        """Distinct keys (sorted, hence grouped by table) with their gradient rows summed in
        the order they came, as `RowStore.push` sums them."""
        unique, inverse = torch.unique(torch.from_numpy(keys), return_inverse=True)
        summed = torch.zeros(unique.shape[0], self.dim, dtype=grads.dtype)
        summed.index_add_(0, inverse, grads)
        keys = unique.numpy()
        return keys, summed, self._runs(keys)

    def _runs(self, keys: np.ndarray) -> list[Segment]:
        """Segments of keys sorted by table."""
        tables = keys >> TABLE_SHIFT
        cuts = np.flatnonzero(tables[1:] != tables[:-1]) + 1
        starts, stops = [0, *cuts.tolist()], [*cuts.tolist(), int(keys.size)]
        return [(self.stores[int(tables[a])], a, b) for a, b in zip(starts, stops, strict=True)]

    def _slots(self, keys: np.ndarray, segments: list[Segment]) -> torch.Tensor:
        """Every key's slot in its table's arena, creating the rows not held yet."""
        slots = self.index.lookup(keys)
        missing = slots < 0
        if missing.any():
            new_keys, inverse = distinct(keys[missing])
            new_slots = np.empty(new_keys.size, dtype=np.int64)
            runs = self._runs(new_keys)
            for store, a, b in runs:
                new_slots[a:b] = store.allocate(b - a)
            self.index.insert(new_keys, new_slots)
            block = torch.empty(new_keys.size, self.width)
            block[:, : self.dim] = self._first_rows(new_keys, runs)
            block[:, self.dim :] = self.optimizer.initial_state(new_keys.size, self.dim)
            for store, a, b in runs:
                store.arena.scatter(torch.from_numpy(new_slots[a:b]), block[a:b])
            slots[missing] = new_slots[inverse]
        out = torch.from_numpy(slots)
        for store, a, b in segments:
            store.touch(out[a:b])
        return out

    def _generation(self) -> int:
        return sum(store.generation for store in self.stores)

    def _pulled_slots(self, keys: np.ndarray, segments: list[Segment]) -> torch.Tensor | None:
        """The slots a recent pull looked up for exactly `keys`, if they still hold those
        rows (no store's generation moved since); touched again for this update."""
        generation = self._generation()
        for pulled in self._pulled:
            if pulled.generation == generation and np.array_equal(pulled.keys, keys):
                self._pulled.remove(pulled)
                for store, a, b in segments:
                    store.touch(pulled.slots[a:b])
                return pulled.slots
        return None

    def _first_rows(self, keys: np.ndarray, runs: list[Segment]) -> torch.Tensor:
        ids = keys & _ID_MASK
        inits = [store.init for store, _, _ in runs]
        seeded = [i for i in inits if isinstance(i, RowInit)]
        if len(seeded) == len(inits) and len({(i.kind, i.scale) for i in seeded}) == 1:
            seeds = np.repeat(np.array([seed_of(i) for i in seeded]), [b - a for _, a, b in runs])
            return seeded_rows(ids, seeds, self.dim, seeded[0].kind, seeded[0].scale)
        return torch.cat([store.init.rows(torch.from_numpy(ids[a:b]), self.dim)
                          for store, a, b in runs])

    def _update(self, keys: np.ndarray, grads: torch.Tensor, segments: list[Segment]) -> None:
        slots = self._pulled_slots(keys, segments)
        if slots is None:
            slots = self._slots(keys, segments)
        if self._block.shape[0] < keys.size:
            self._block = torch.empty(max(keys.size, 2 * self._block.shape[0]), self.width)
        block = self._block[: keys.size]
        for store, a, b in segments:
            if b > a:
                store.arena.gather(slots[a:b], out=block[a:b])
        steps = {store.steps for store, a, b in segments if b > a}
        if len(steps) == 1:  # the tables of a message share their step count, as a rule
            self.optimizer.update(block, grads, steps.pop())
        else:
            for store, a, b in segments:
                self.optimizer.update(block[a:b], grads[a:b], store.steps)
        for store, a, b in segments:
            if b > a:
                store.arena.scatter(slots[a:b], block[a:b])
