"""Rows by slot across chunks."""

from __future__ import annotations

import torch

from heterps_core.ps.arena import Arena


def test_rows_written_across_chunks_read_back() -> None:
    arena = Arena(3, chunk_rows=1024)
    arena.reserve(5000)
    assert arena.capacity >= 5000 and len(arena.chunks) == 5
    slots = torch.randperm(5000)[:3000]
    values = torch.randn(3000, 3)
    arena.scatter(slots, values)
    assert torch.equal(arena.gather(slots), values)
    assert torch.equal(arena.gather(slots, slice(1, 3)), values[:, 1:])
    arena.scatter(slots[:10], torch.zeros(10, 1), slice(2, 3))
    assert not arena.gather(slots[:10], slice(2, 3)).any()
    assert torch.equal(arena.gather(slots[:10], slice(0, 2)), values[:10, :2])


def test_the_first_chunk_doubles_and_keeps_its_rows() -> None:
    arena = Arena(2, chunk_rows=1 << 14)
    arena.scatter(torch.arange(1000), torch.arange(2000.0).reshape(1000, 2))
    arena.reserve(3000)
    assert len(arena.chunks) == 1 and arena.capacity == 4096
    assert torch.equal(arena.gather(torch.arange(1000)), torch.arange(2000.0).reshape(1000, 2))
    arena.reserve(20_000)
    assert [c.shape[0] for c in arena.chunks] == [1 << 14, 1 << 14]
    assert torch.equal(arena.gather(torch.tensor([999])), torch.tensor([[1998.0, 1999.0]]))
