"""The hot-row cache's staleness bound (ps/cache.py), against a source whose rows say when
they were pulled."""

from __future__ import annotations

import pytest
import torch

from heterps_core.ps.cache import RowCache
from heterps_core.ps.remote import BatchRows


def _read(cache: RowCache, looked_up: torch.Tensor, round_: int) -> tuple[torch.Tensor, int]:
    """The rows one round reads, as the stage's client assembles them; every pulled row's
    value is the round it was pulled. Returns (rows, ids pulled)."""
    ids, inverse = BatchRows.of(looked_up)
    hit, cached = cache.lookup(ids, round_)
    pulled = torch.full((int((~hit).sum()), cache.dim), float(round_))
    if cache.expired(round_):
        cache.refresh(ids, pulled, inverse, round_)
        return pulled, pulled.shape[0]
    block = torch.empty(ids.numel(), cache.dim)
    block[hit], block[~hit] = cached, pulled
    return block, pulled.shape[0]


@pytest.mark.parametrize("staleness", [0, 1, 3])
def test_a_row_read_at_round_r_was_pulled_at_round_r_minus_s_or_later(staleness: int) -> None:
    generator = torch.Generator().manual_seed(0)
    cache = RowCache(dim=2, capacity=50, staleness=staleness)
    pulled_total = looked_total = 0
    for round_ in range(20):
        # Power-law-ish: a hot head read 3 times every round, a random tail.
        looked_up = torch.cat([torch.arange(30).repeat(3), torch.randint(30, 10_000, (200,),
                                                               generator=generator)])
        rows, pulled = _read(cache, looked_up, round_)
        age = round_ - rows[:, 0]
        assert age.min() >= 0 and age.max() <= staleness
        assert cache.ids.numel() <= 50  # bounded, whatever the vocabulary
        pulled_total += pulled
        looked_total += rows.shape[0]
    if staleness == 0:
        assert cache.hits == 0 and pulled_total == looked_total  # no cache at all
    else:
        # The 30 hot rows are read from the cache on every round but the refreshes.
        refreshes = len(range(0, 20, staleness + 1))
        assert cache.hits >= 30 * (20 - refreshes)
        assert pulled_total <= looked_total - 30 * (20 - refreshes)


def test_the_cache_keeps_the_most_looked_up_rows_of_a_refresh() -> None:
    cache = RowCache(dim=1, capacity=2, staleness=5)
    looked_up = torch.tensor([7, 7, 7, 3, 9, 9, 1])
    ids, inverse = BatchRows.of(looked_up)
    cache.refresh(ids, ids.float().unsqueeze(1), inverse, 0)
    assert cache.ids.tolist() == [7, 9] and cache.rows[:, 0].tolist() == [7.0, 9.0]
    with pytest.raises(ValueError, match="capacity"):
        RowCache(dim=1, capacity=0, staleness=1)
