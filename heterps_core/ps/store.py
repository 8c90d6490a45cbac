"""One table's rows on one parameter-server shard: only the rows that were ever touched.

A row comes into being the first time it is pulled or pushed, with the value its table's
`FirstRows` gives its id (`RowInit`: a hash of the table seed and the id, so no shard count
or order of first touches changes a result) and a fresh optimiser state. Memory is the rows
touched times (row + state + index entry), never the vocabulary.

Eviction (off by default, for streaming data): with `evict_after=N`, every N updates the
rows neither pulled nor pushed in the last N updates are dropped with their optimiser
state; their slots are reused, and a dropped row that comes back starts from its initial
value again.

The tables of one shard may share one id index (`tableset.py` looks up a whole message's
ids in one pass): a key is then the row id with the table's number in its top bits
(`TABLE_SHIFT`), and each store keeps its own arena, slots and checkpoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from heterps_core.ps.arena import CHUNK_ROWS, Arena
from heterps_core.ps.index import RowIndex, distinct
from heterps_core.ps.optim import SparseOptimizer
from heterps_core.ps.rowinit import FirstRows

TABLE_SHIFT = 56  # key = table << TABLE_SHIFT | row id, in an index shared by tables
MAX_TABLES = 1 << (63 - TABLE_SHIFT)  # keys stay non-negative (the index's EMPTY is -1)


class RowStore:
    def __init__(
        self,
        dim: int,
        init: FirstRows,
        optimizer: SparseOptimizer,
        evict_after: int | None = None,
        chunk_rows: int = CHUNK_ROWS,
        index: RowIndex | None = None,
        table: int = 0,
    ) -> None:
        if evict_after is not None and evict_after < 1:
            raise ValueError(f"evict_after must be at least 1, got {evict_after}")
        if not 0 <= table < MAX_TABLES:
            raise ValueError(f"a shared index holds at most {MAX_TABLES} tables, got {table}")
        self.dim = dim
        self.init = init
        self.optimizer = optimizer
        self.evict_after = evict_after
        self.width = dim * (1 + optimizer.states)
        self.chunk_rows = chunk_rows
        self.table = table
        self.tag = np.int64(table << TABLE_SHIFT)
        self.index = RowIndex() if index is None else index
        self.shared = index is not None
        self.steps = 0  # updates applied (the optimiser's step count)
        self.evicted = 0
        # Moves whenever a held row may lose its slot (an eviction, a reset, a restore):
        # slots remembered across calls are good only while it stands still.
        self.generation = 0
        self._reset()

    def _reset(self) -> None:
        self.generation += 1
        if self.shared:
            keys, slots = self.index.items()
            others = ~self.mine(keys)
            self.index.rebuild(keys[others], slots[others])
        else:
            self.index = RowIndex()
        self.count = 0  # rows held (the index's size, when it is not shared)
        self.arena = Arena(self.width, chunk_rows=self.chunk_rows)
        # The update after which each slot was last touched (only kept with eviction).
        self.touched = Arena(1, torch.int32, self.chunk_rows) if self.evict_after else None
        self.high = 0  # slots 0..high-1 have been handed out
        self.free = np.empty(0, dtype=np.int64)  # slots freed by eviction, reused first

    def keys(self, ids: torch.Tensor) -> np.ndarray:
        """The index keys of row ids (the ids themselves, tagged with the table if shared)."""
        keys = ids.detach().reshape(-1).to("cpu", torch.int64).numpy()
        if self.shared:
            if (keys >> TABLE_SHIFT).any():  # negative ids too (the shift keeps the sign)
                raise ValueError(f"row ids must be within [0, 2**{TABLE_SHIFT}) in a shared "
                                 "index")
            keys = keys | self.tag
        return keys

    def mine(self, keys: np.ndarray) -> np.ndarray:
        """Which keys of a shared index are this table's."""
        return (keys >> TABLE_SHIFT) == self.table

    # --- rows ------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows held now."""
        return self.count

    @property
    def nbytes(self) -> int:
        """Bytes held: rows and state (arena), index (this table's share of a shared one),
        eviction bookkeeping."""
        extra = self.touched.nbytes if self.touched is not None else 0
        index = self.index.nbytes * self.count // max(self.index.size, 1)
        return self.arena.nbytes + index + extra + self.free.nbytes

    def slots(self, ids: torch.Tensor) -> torch.Tensor:
        """The slot of every id (duplicates allowed), creating the rows not held yet."""
        keys = self.keys(ids)
        slots = self.index.lookup(keys)
        missing = slots < 0
        if missing.any():
            new_keys, inverse = distinct(keys[missing])
            new_slots = self.allocate(new_keys.size)
            self.index.insert(new_keys, new_slots)
            fresh = self.init.rows(torch.from_numpy(new_keys & ~self.tag), self.dim)
            self.write_new(new_slots, fresh)
            slots[missing] = new_slots[inverse]
        out = torch.from_numpy(slots)
        self.touch(out)
        return out

    def allocate(self, n: int) -> np.ndarray:
        """Slots for n new rows (counted as held from now on)."""
        reused, self.free = self.free[:n], self.free[n:]
        fresh = np.arange(self.high, self.high + n - reused.size, dtype=np.int64)
        self.high += fresh.size
        self.count += n
        self.arena.reserve(self.high)
        if self.touched is not None:
            self.touched.reserve(self.high)
        return np.concatenate([reused, fresh])

    def write_new(self, slots: np.ndarray, rows: torch.Tensor) -> None:
        """Store the first values `rows` of new rows at `slots`, with a fresh optimiser state."""
        block = torch.empty(slots.size, self.width)
        block[:, : self.dim] = rows
        block[:, self.dim :] = self.optimizer.initial_state(slots.size, self.dim)
        self.arena.scatter(torch.from_numpy(slots), block)

    def touch(self, slots: torch.Tensor) -> None:
        """Remember that `slots` were used in the current update (for eviction)."""
        if self.touched is not None:
            self.touched.scatter(
                slots, torch.full((slots.shape[0], 1), self.steps, dtype=torch.int32)
            )

    def pull(self, ids: torch.Tensor) -> torch.Tensor:
        """Current values [len(ids), dim] of rows `ids`."""
        return self.arena.gather(self.slots(ids), slice(0, self.dim))

    def push(self, ids: torch.Tensor, grads: torch.Tensor, distinct: bool = False) -> None:
        """One optimiser update with the gradient rows `grads` of rows `ids`.

        Repeated ids are summed first unless the caller says they are `distinct` (as a
        coalesced sparse gradient is). An empty push still counts as an update: the step
        count stays the same on every shard and equal to the trainer's.
        """
        self.steps += 1
        if ids.numel():
            if not distinct:
                ids, inverse = torch.unique(ids, return_inverse=True)
                summed = torch.zeros(ids.shape[0], self.dim, dtype=grads.dtype)
                grads = summed.index_add_(0, inverse, grads)
            slots = self.slots(ids)
            block = self.arena.gather(slots)
            self.optimizer.update(block, grads.to(block.dtype), self.steps)
            self.arena.scatter(slots, block)
        self.evict_due()

    def evict_due(self) -> None:
        """After an update: evict if this is the update eviction runs at."""
        if self.evict_after is not None and self.steps % self.evict_after == 0:
            self.evict(self.steps - self.evict_after)

    def evict(self, before: int) -> int:
        """Drop the rows last touched before update `before`; returns how many."""
        assert self.touched is not None, "eviction is on only with evict_after"
        keys, slots = self.index.items()
        mine = self.mine(keys) if self.shared else np.ones(keys.size, dtype=bool)
        last = self.touched.gather(torch.from_numpy(slots[mine])).squeeze(1).numpy()
        drop = np.zeros(keys.size, dtype=bool)
        drop[mine] = last < before
        dropped = int(drop.sum())
        if dropped:
            self.index.rebuild(keys[~drop], slots[~drop])
            self.free = np.sort(np.concatenate([self.free, slots[drop]]))
            self.evicted += dropped
            self.count -= dropped
            self.generation += 1
        return dropped

    # --- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything a restore needs: the id of every slot (-1: free), rows and state."""
        keys, slots = self.index.items()
        if self.shared:
            mine = self.mine(keys)
            keys, slots = keys[mine] & ~self.tag, slots[mine]
        ids_by_slot = np.full(self.high, -1, dtype=np.int64)
        ids_by_slot[slots] = keys
        state: dict[str, Any] = {
            "dim": self.dim,
            "optimizer": self.optimizer.config(),
            "init": repr(self.init),
            "steps": self.steps,
            "evicted": self.evicted,
            "ids": torch.from_numpy(ids_by_slot),
            "chunks": _used(self.arena, self.high),
        }
        if self.touched is not None:
            state["touched"] = _used(self.touched, self.high)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["dim"] != self.dim or state["optimizer"]["name"] != self.optimizer.name:
            raise ValueError(
                f"checkpoint holds dim {state['dim']} rows for {state['optimizer']['name']}, "
                f"this table has dim {self.dim} and {self.optimizer.name}"
            )
        self._reset()
        ids_by_slot = state["ids"].numpy()
        self.high = ids_by_slot.size
        self.arena.reserve(self.high)
        _fill(self.arena, state["chunks"])
        if self.touched is not None:
            self.touched.reserve(self.high)
            if "touched" in state:
                _fill(self.touched, state["touched"])
        used = ids_by_slot >= 0
        keys = ids_by_slot[used] | self.tag
        if self.shared:
            held, slots = self.index.items()
            self.index.rebuild(np.concatenate([held, keys]),
                               np.concatenate([slots, np.flatnonzero(used)]))
        else:
            self.index.rebuild(keys, np.flatnonzero(used))
        self.count = int(used.sum())
        self.free = np.flatnonzero(~used).astype(np.int64)
        self.steps = int(state["steps"])
        self.evicted = int(state.get("evicted", 0))


def _used(arena: Arena, high: int) -> list[torch.Tensor]:
    """The arena's chunks cut to the slots handed out (a partly used chunk is copied, so a
    checkpoint does not save the unused part of its storage)."""
    out: list[torch.Tensor] = []
    start = 0
    for chunk in arena.chunks:
        n = min(chunk.shape[0], high - start)
        if n <= 0:
            break
        out.append(chunk if n == chunk.shape[0] else chunk[:n].clone())
        start += n
    return out


def _fill(arena: Arena, chunks: list[torch.Tensor]) -> None:
    start = 0
    for part in chunks:
        slots = torch.arange(start, start + part.shape[0])
        arena.scatter(slots, part)
        start += part.shape[0]
