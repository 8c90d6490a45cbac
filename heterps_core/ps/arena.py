"""A growable block of rows addressed by slot, that never copies what it already holds.

Rows live in chunks of `chunk_rows` rows; the first chunk starts small and doubles until it
reaches that size, after which whole chunks are added. Growing therefore never holds two
copies of the arena (a single tensor grown by reallocation would, at its peak), and the
memory not yet used is below one chunk. New rows are not cleared: the store writes every
slot it hands out, and untouched pages of a chunk take no resident memory.
"""

from __future__ import annotations

import torch

CHUNK_ROWS = 1 << 20
_FIRST_ROWS = 1 << 10


class Arena:
    def __init__(
        self, width: int, dtype: torch.dtype = torch.float32, chunk_rows: int = CHUNK_ROWS
    ) -> None:
        if chunk_rows & (chunk_rows - 1):
            raise ValueError(f"chunk_rows must be a power of two, got {chunk_rows}")
        self.width = width
        self.dtype = dtype
        self.chunk_rows = chunk_rows
        self.shift = chunk_rows.bit_length() - 1
        self.chunks: list[torch.Tensor] = [
            torch.zeros(min(_FIRST_ROWS, chunk_rows), width, dtype=dtype)
        ]

    @property
    def capacity(self) -> int:
        return sum(c.shape[0] for c in self.chunks)

    @property
    def nbytes(self) -> int:
        return sum(c.numel() * c.element_size() for c in self.chunks)

    def reserve(self, rows: int) -> None:
        """Make slots 0..rows-1 addressable."""
        first = self.chunks[0]
        if len(self.chunks) == 1 and first.shape[0] < self.chunk_rows and rows > first.shape[0]:
            size = first.shape[0]
            while size < min(rows, self.chunk_rows):
                size *= 2
            grown = torch.empty(size, self.width, dtype=self.dtype)
            grown[: first.shape[0]] = first
            self.chunks[0] = grown
        while self.capacity < rows:
            self.chunks.append(torch.empty(self.chunk_rows, self.width, dtype=self.dtype))

    def _parts(self, slots: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """(chunk, local slots) per chunk hit, with the positions they came from (None: all)."""
        if len(self.chunks) == 1:
            return [(self.chunks[0], None)]
        which = slots >> self.shift
        counts = torch.bincount(which, minlength=len(self.chunks))
        if int((counts > 0).sum()) == 1:
            return [(self.chunks[int(which[0])], None)]
        return [
            (self.chunks[c], (which == c).nonzero().squeeze(1))
            for c in counts.nonzero().squeeze(1).tolist()
        ]

    def _local(self, slots: torch.Tensor) -> torch.Tensor:
        """Slots within their chunk, for slots that are all in one chunk."""
        # With one chunk they already are: a message's gathers skip an op per table.
        return slots if len(self.chunks) == 1 else slots & (self.chunk_rows - 1)

    def gather(
        self, slots: torch.Tensor, cols: slice | None = None, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Rows at `slots` (int64), columns `cols` (all by default), into `out` (a contiguous
        [len(slots), width of cols] tensor, e.g. a view of a message's block) or a new one."""
        mask = self.chunk_rows - 1
        parts = self._parts(slots)
        if len(parts) == 1 and parts[0][1] is None:
            source, local = _columns(parts[0][0], cols), self._local(slots)
            if out is None:
                return source.index_select(0, local)
            return torch.index_select(source, 0, local, out=out)
        if out is None:
            width = len(range(*(cols or slice(None)).indices(self.width)))
            out = torch.empty(slots.shape[0], width, dtype=self.dtype)
        for chunk, where in parts:
            assert where is not None
            out[where] = _columns(chunk, cols).index_select(0, slots[where] & mask)
        return out

    def scatter(self, slots: torch.Tensor, values: torch.Tensor, cols: slice | None = None) -> None:
        """Write `values` at `slots` (distinct), columns `cols`."""
        mask = self.chunk_rows - 1
        for chunk, where in self._parts(slots):
            target = _columns(chunk, cols)
            if where is None:
                target.index_copy_(0, self._local(slots), values)
            else:
                target.index_copy_(0, slots[where] & mask, values[where])


def _columns(chunk: torch.Tensor, cols: slice | None) -> torch.Tensor:
    return chunk if cols is None else chunk[:, cols]
