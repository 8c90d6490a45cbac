"""A stage's bounded cache of one table's hot rows, with a staleness bound in steps (async).

Off by default. With `--cache-rows N --cache-staleness S` (async mode only), a stage
replica keeps up to N rows of each of its tables: on a *refresh* round it pulls every row
its mini-batch reads (as without a cache) and keeps the N most looked-up of them; for the
next S rounds it reads a row from the cache when it is there and pulls only the others;
round S+1 after a refresh is the next refresh. So a row read at round r was pulled at
round r-S or later: it misses at most the updates of the S mini-batches this replica ran
since (its own pushes included: the cache is never written by them) plus whatever the
other replicas pushed meanwhile, and never more. S = 0 is no cache at all (every round
refreshes). Pushes are unchanged: every gradient row goes to the server, which stays the
only copy that is current. Memory: N rows x dim per table, whatever the vocabulary.
"""

from __future__ import annotations

import torch


class RowCache:
    def __init__(self, dim: int, capacity: int, staleness: int) -> None:
        if capacity < 1 or staleness < 0:
            raise ValueError("capacity must be at least 1 and staleness at least 0")
        self.dim = dim
        self.capacity = capacity
        self.staleness = staleness
        self.ids = torch.empty(0, dtype=torch.int64)  # sorted
        self.rows = torch.empty(0, dim)
        self.built: int | None = None  # the round its rows were pulled
        self.hits = 0
        self.misses = 0

    def expired(self, round_: int) -> bool:
        """Must round `round_` pull every row it reads (and refresh the cache)?"""
        return self.built is None or round_ - self.built > self.staleness

    def lookup(self, ids: torch.Tensor, round_: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(which of the sorted distinct `ids` are cached, their rows) for round `round_`."""
        if self.expired(round_) or self.ids.numel() == 0:
            hit = torch.zeros(ids.numel(), dtype=torch.bool)
            self.misses += ids.numel()
            return hit, self.rows[:0]
        pos = torch.searchsorted(self.ids, ids).clamp_(max=self.ids.numel() - 1)
        hit = self.ids[pos] == ids
        self.hits += int(hit.sum())
        self.misses += ids.numel() - int(hit.sum())
        return hit, self.rows[pos[hit]]

    def refresh(self, ids: torch.Tensor, rows: torch.Tensor, inverse: torch.Tensor,
                round_: int) -> None:
        """Keep the `capacity` rows of a refresh round's pull that its lookups used most
        (`inverse`: where each lookup sits among the sorted distinct `ids`)."""
        keep = torch.arange(ids.numel())
        if ids.numel() > self.capacity:
            counts = torch.bincount(inverse, minlength=ids.numel())
            keep = counts.topk(self.capacity).indices.sort().values  # sorted ids stay sorted
        self.ids = ids[keep].clone()
        self.rows = rows.detach()[keep].clone()
        self.built = round_
