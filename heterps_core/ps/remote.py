"""Tables a stage does not hold: lookups into the rows of the current mini-batch only.

`RemoteTable` stands in for a sparse `nn.Embedding` / `nn.EmbeddingBag` of a model (same
call, no weight). For each mini-batch it works on a `BatchRows`: the distinct ids the
mini-batch looks up, their current values fetched in one pull, as a leaf tensor; a lookup
maps its ids into that block and looks up there. The backward passes of all micro-batches
add into the block's gradient, which is one gradient row per distinct row: what is pushed.

Where the rows come from is the caller's (`fetch(table, ids) -> rows`): the parameter
server's client in a job, a `RowStore` in a test. Nothing here is as large as a table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from heterps_core.ps.index import distinct

Table = nn.Embedding | nn.EmbeddingBag
Fetch = Callable[[int, torch.Tensor], torch.Tensor]


class BatchRows:
    """The rows one mini-batch reads of one table: sorted distinct ids and their values.

    `inverse` (optional) is where each id of the mini-batch's lookups, in the order they
    were collected, sits among `ids`: micro-batches that look up consecutive parts of the
    mini-batch take their positions from it (checked) instead of searching.
    """

    def __init__(
        self, ids: torch.Tensor, values: torch.Tensor, inverse: torch.Tensor | None = None
    ) -> None:
        self.ids = ids
        self.values = values.requires_grad_(True)
        self._inverse = inverse
        self._cursor = 0

    @classmethod
    def of(cls, looked_up: torch.Tensor, rows: int | None = None
           ) -> tuple[torch.Tensor, torch.Tensor]:
        """(sorted distinct ids, inverse) of the ids a mini-batch looks up, in order; `rows`:
        the table's row count, when known (ps/index.py: `distinct`)."""
        keys, inverse = distinct(looked_up.detach().reshape(-1).to("cpu", torch.int64).numpy(),
                                 rows)
        return torch.from_numpy(keys), torch.from_numpy(inverse)

    def local(self, ids: torch.Tensor) -> torch.Tensor | None:
        """Positions of `ids` in the block, or None if some id is not in it."""
        flat = ids.reshape(-1).to(self.ids.device)
        inverse, start = self._inverse, self._cursor
        if inverse is not None and start + flat.numel() <= inverse.numel():
            guess = inverse[start : start + flat.numel()]
            if torch.equal(self.ids[guess], flat):
                self._cursor += flat.numel()
                return guess.view(ids.shape)
        if self.ids.numel() == 0:
            return flat.view(ids.shape) if flat.numel() == 0 else None
        pos = torch.searchsorted(self.ids, flat).clamp_(max=self.ids.numel() - 1)
        return pos.view(ids.shape) if torch.equal(self.ids[pos], flat) else None

    def gradient(self) -> torch.Tensor:
        """The summed gradient of every distinct row (zeros where no lookup contributed)."""
        grad = self.values.grad
        return torch.zeros_like(self.values.detach()) if grad is None else grad


class RemoteTable(nn.Module):
    def __init__(self, original: Table, table: int, fetch: Fetch) -> None:
        super().__init__()
        if getattr(original, "padding_idx", None) is not None or original.max_norm is not None:
            raise ValueError("remote tables support neither padding_idx nor max_norm")
        self.table = table
        self.num_embeddings, self.embedding_dim = original.num_embeddings, original.embedding_dim
        self.mode = original.mode if isinstance(original, nn.EmbeddingBag) else None
        self.fetch = fetch
        self.rows: BatchRows | None = None
        # Set by `collect`: record the ids of a forward pass instead of looking them up.
        self.collected: list[torch.Tensor] | None = None

    def begin(self, rows: BatchRows | None = None) -> None:
        """A new mini-batch: its rows (prefetched), or None to fetch at the first lookup."""
        self.rows = rows

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor | None = None,
                per_sample_weights: torch.Tensor | None = None) -> torch.Tensor:
        if self.collected is not None:
            self.collected.append(ids.detach().reshape(-1))
            return self._placeholder(ids, offsets)
        if self.rows is None:
            unique, inverse = BatchRows.of(ids, self.num_embeddings)
            self.rows = BatchRows(unique, self.fetch(self.table, unique), inverse)
        local = self.rows.local(ids)
        if local is None:
            raise RuntimeError(
                f"table {self.table}: a lookup outside the rows fetched for this mini-batch"
            )
        weight = self.rows.values
        if self.mode is None:
            return functional.embedding(local, weight)
        return functional.embedding_bag(local, weight, offsets, mode=self.mode,
                                        per_sample_weights=per_sample_weights)

    def _placeholder(self, ids: torch.Tensor, offsets: torch.Tensor | None) -> torch.Tensor:
        if self.mode is None:
            return torch.zeros(*ids.shape, self.embedding_dim)
        bags = ids.shape[0] if offsets is None else offsets.shape[0]
        return torch.zeros(bags, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"table={self.table}, {self.num_embeddings}, {self.embedding_dim}, mode={self.mode}"


def replace_table(root: nn.Module, path: str, table: int, fetch: Fetch) -> RemoteTable:
    """Put a remote table (number `table`) in place of the sparse table at `path` in `root`."""
    parent_path, _, name = path.rpartition(".")
    parent = root.get_submodule(parent_path) if parent_path else root
    original = getattr(parent, name)
    if not isinstance(original, nn.Embedding | nn.EmbeddingBag):
        raise TypeError(f"{path} is a {type(original).__name__}, not an embedding table")
    remote = RemoteTable(original, table, fetch)
    setattr(parent, name, remote)
    return remote


def swap_in(model: nn.Module, paths: list[str], fetch: Fetch) -> list[RemoteTable]:
    """Replace the modules at `paths` (sparse tables) by remote tables numbered in order."""
    return [replace_table(model, path, i, fetch) for i, path in enumerate(paths)]


class _Collected(Exception):
    """Ends a collecting forward pass after the last table's lookup."""


def collect_rows(remotes: list[RemoteTable], forward: Callable[[], Any]
                 ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`BatchRows.of` each table's ids in `forward` (`collect_ids`): what one pull asks for."""
    return [BatchRows.of(ids, remote.num_embeddings)
            for remote, ids in zip(remotes, collect_ids(remotes, forward), strict=True)]


def collect_ids(remotes: list[RemoteTable], forward: Callable[[], Any]) -> list[torch.Tensor]:
    """The ids each table looks up in `forward`, in lookup order (run without grad, cut
    short after the last lookup, placeholders instead of rows): `BatchRows.of` them gives
    what one prefetch pulls."""
    for remote in remotes:
        remote.collected = []
    seen: set[int] = set()

    def _after(module: nn.Module, args: Any, output: Any) -> None:
        assert isinstance(module, RemoteTable)
        seen.add(module.table)
        if len(seen) == len(remotes):
            raise _Collected

    hooks = [remote.register_forward_hook(_after) for remote in remotes]
    try:
        with torch.no_grad():
            forward()
    except _Collected:
        pass
    finally:
        for hook in hooks:
            hook.remove()
    out = []
    for remote in remotes:
        assert remote.collected is not None
        ids = torch.cat(remote.collected) if remote.collected else torch.empty(0, dtype=torch.long)
        out.append(ids)
        remote.collected = None
    return out
