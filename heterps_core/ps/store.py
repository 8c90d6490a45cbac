"""One table's rows on one parameter-server shard: only the rows that were ever touched.

A row comes into being the first time it is pulled or pushed, with the value its table's
`FirstRows` gives its id (`RowInit`: a hash of the table seed and the id, so no shard count
or order of first touches changes a result) and a fresh optimiser state. Memory is the rows
touched times (row + state + index entry), never the vocabulary.

Eviction (off by default, for streaming data): with `evict_after=N`, every N updates the
rows neither pulled nor pushed in the last N updates are dropped with their optimiser
state; their slots are reused, and a dropped row that comes back starts from its initial
value again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from heterps_core.ps.arena import CHUNK_ROWS, Arena
from heterps_core.ps.index import RowIndex, distinct
from heterps_core.ps.optim import SparseOptimizer
from heterps_core.ps.rowinit import FirstRows


class RowStore:
    def __init__(
        self,
        dim: int,
        init: FirstRows,
        optimizer: SparseOptimizer,
        evict_after: int | None = None,
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        if evict_after is not None and evict_after < 1:
            raise ValueError(f"evict_after must be at least 1, got {evict_after}")
        self.dim = dim
        self.init = init
        self.optimizer = optimizer
        self.evict_after = evict_after
        self.width = dim * (1 + optimizer.states)
        self.chunk_rows = chunk_rows
        self.steps = 0  # updates applied (the optimiser's step count)
        self.evicted = 0
        self._reset()

    def _reset(self) -> None:
        self.index = RowIndex()
        self.arena = Arena(self.width, chunk_rows=self.chunk_rows)
        # The update after which each slot was last touched (only kept with eviction).
        self.touched = Arena(1, torch.int32, self.chunk_rows) if self.evict_after else None
        self.high = 0  # slots 0..high-1 have been handed out
        self.free = np.empty(0, dtype=np.int64)  # slots freed by eviction, reused first

    # --- rows ------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows held now."""
        return self.index.size

    @property
    def nbytes(self) -> int:
        """Bytes held: rows and state (arena), index, eviction bookkeeping."""
        extra = self.touched.nbytes if self.touched is not None else 0
        return self.arena.nbytes + self.index.nbytes + extra + self.free.nbytes

    def slots(self, ids: torch.Tensor) -> torch.Tensor:
        """The slot of every id (duplicates allowed), creating the rows not held yet."""
        keys = ids.detach().reshape(-1).to("cpu", torch.int64).numpy()
        slots = self.index.lookup(keys)
        missing = slots < 0
        if missing.any():
            new_keys, inverse = distinct(keys[missing])
            new_slots = self._allocate(new_keys.size)
            self.index.insert(new_keys, new_slots)
            fresh = torch.from_numpy(new_slots)
            block = torch.empty(new_keys.size, self.width)
            block[:, : self.dim] = self.init.rows(torch.from_numpy(new_keys), self.dim)
            block[:, self.dim :] = self.optimizer.initial_state(new_keys.size, self.dim)
            self.arena.scatter(fresh, block)
            slots[missing] = new_slots[inverse]
        out = torch.from_numpy(slots)
        if self.touched is not None:
            self.touched.scatter(out, torch.full((out.shape[0], 1), self.steps, dtype=torch.int32))
        return out

    def _allocate(self, n: int) -> np.ndarray:
        reused, self.free = self.free[:n], self.free[n:]
        fresh = np.arange(self.high, self.high + n - reused.size, dtype=np.int64)
        self.high += fresh.size
        self.arena.reserve(self.high)
        if self.touched is not None:
            self.touched.reserve(self.high)
        return np.concatenate([reused, fresh])

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
        if self.evict_after is not None and self.steps % self.evict_after == 0:
            self.evict(self.steps - self.evict_after)

    def evict(self, before: int) -> int:
        """Drop the rows last touched before update `before`; returns how many."""
        assert self.touched is not None, "eviction is on only with evict_after"
        keys, slots = self.index.items()
        last = self.touched.gather(torch.from_numpy(slots)).squeeze(1).numpy()
        keep = last >= before
        dropped = int((~keep).sum())
        if dropped:
            self.index.rebuild(keys[keep], slots[keep])
            self.free = np.sort(np.concatenate([self.free, slots[~keep]]))
            self.evicted += dropped
        return dropped

    # --- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything a restore needs: the id of every slot (-1: free), rows and state."""
        keys, slots = self.index.items()
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
        self.index.rebuild(ids_by_slot[used], np.flatnonzero(used))
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
