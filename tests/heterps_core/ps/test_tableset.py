"""A shard's message in one pass equals its tables served one by one, bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from heterps_core.ps import RowInit, RowStore, WeightRows, create
from heterps_core.ps.shard import Shard, TableSpec

TABLES = 5
VOCAB = 400


def _specs(name: str, replicas: int = 1, evict_after: int | None = None) -> list[TableSpec]:
    # Two row widths and one table with its own first rows: three table sets on a shard.
    specs = [TableSpec(4, RowInit("normal", 0.01, seed=t), create(name, lr=0.05), replicas,
                       evict_after) for t in range(TABLES - 2)]
    specs.append(TableSpec(6, RowInit("uniform", 0.1, seed=7), create(name, lr=0.05), replicas,
                           evict_after))
    specs.append(TableSpec(4, WeightRows(torch.randn(VOCAB, 4, generator=_gen(99))),
                           create(name, lr=0.05), replicas, evict_after))
    return specs


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _message(step: int, specs: list[TableSpec], writers: int = 1) -> list[list[tuple]]:
    """Per writer: (table, distinct ids, gradient rows) of every table, some tables empty."""
    gen = _gen(step)
    out = []
    for _ in range(writers):
        parts = []
        for t, spec in enumerate(specs):
            n = 0 if (step + t) % 4 == 0 else 30
            ids = torch.randint(0, VOCAB, (n,), generator=gen).unique()
            parts.append((t, ids, torch.randn(ids.numel(), spec.dim, generator=gen)))
        out.append(parts)
    return out


def _stores(specs: list[TableSpec]) -> list[RowStore]:
    return [RowStore(s.dim, s.init, create(s.optimizer.name, lr=0.05), evict_after=s.evict_after)
            for s in specs]


@pytest.mark.parametrize("name", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("shards", [1, 3])
def test_a_message_in_one_pass_equals_the_tables_one_by_one(name: str, shards: int) -> None:
    specs = _specs(name)
    servers = [Shard(specs, synchronous=False) for _ in range(shards)]
    alone = [_stores(specs) for _ in range(shards)]
    for step in range(12):
        (parts,) = _message(step, specs)
        for s, (server, stores) in enumerate(zip(servers, alone, strict=True)):
            mine = [(t, ids[ids % shards == s]) for t, ids, _ in parts]
            grads = [g[ids % shards == s] for _, ids, g in parts]
            got = server.pull_each(mine)
            flat = server.pull_many(mine)
            for (t, ids), rows in zip(mine, got, strict=True):
                assert torch.equal(rows, stores[t].pull(ids))
            assert torch.equal(flat, torch.cat([r.reshape(-1) for r in got]))
            server.push_many(step, [(t, ids, g) for (t, ids), g in zip(mine, grads, strict=True)])
            for (t, ids), g in zip(mine, grads, strict=True):
                stores[t].push(ids, g, distinct=True)
    for server, stores in zip(servers, alone, strict=True):
        assert server.rows() == [s.rows for s in stores]
        assert [t.store.steps for t in server.tables] == [s.steps for s in stores] == [12] * 5


def test_sync_rounds_of_several_writers_are_summed_averaged_and_applied_in_one_pass() -> None:
    specs = _specs("adam", replicas=2)
    server = Shard(specs, synchronous=True)
    stores = _stores(specs)
    for step in range(6):
        writers = _message(step, specs, writers=2)
        server.push_many(step, writers[0])
        assert not server.ready(0, step + 1)
        server.push_many(step, writers[1])
        assert all(server.ready(t, step + 1) for t in range(TABLES))
        for t in range(TABLES):
            ids = torch.cat([w[t][1] for w in writers])
            stores[t].push(ids, torch.cat([w[t][2] for w in writers]) * 0.5)
    for t in range(TABLES):
        ids = torch.arange(VOCAB)
        assert torch.equal(server.pull(t, ids), stores[t].pull(ids))


def test_eviction_and_checkpoints_stay_per_table(tmp_path: Path) -> None:
    specs = _specs("adam", evict_after=3)
    server = Shard(specs, synchronous=False)
    stores = _stores(specs)
    for step in range(10):
        (parts,) = _message(step, specs)
        server.push_many(step, parts)
        for t, ids, g in parts:
            stores[t].push(ids, g, distinct=True)
    assert [t.store.evicted for t in server.tables] == [s.evicted for s in stores]
    assert sum(s.evicted for s in stores) > 0
    torch.save(server.state_dict(), tmp_path / "part.pt")
    resumed = Shard(specs, synchronous=False)
    resumed.load_state_dict(torch.load(tmp_path / "part.pt", weights_only=False))
    for step in range(10, 16):
        (parts,) = _message(step, specs)
        resumed.push_many(step, parts)
        server.push_many(step, parts)
    assert resumed.rows() == server.rows()
    for t in range(TABLES):
        ids = torch.arange(VOCAB)
        assert torch.equal(resumed.pull(t, ids), server.pull(t, ids))


def _count_lookups(server: Shard) -> list[int]:
    """How many hash passes each table set's index makes from now on (the real index,
    counted)."""
    counts = [0] * len(server.sets)
    for n, tables in enumerate(server.sets):
        lookup = tables.index.lookup

        def counted(keys: object, n: int = n, lookup: object = lookup) -> object:
            counts[n] += 1
            return lookup(keys)  # type: ignore[operator]

        tables.index.lookup = counted  # type: ignore[method-assign]
    return counts


def test_a_push_takes_the_slots_its_pull_looked_up() -> None:
    specs = _specs("adam")
    server = Shard(specs, synchronous=False)
    stores = _stores(specs)
    counts = _count_lookups(server)
    for step in range(4):
        (parts,) = _message(step, specs)
        server.pull_many([(t, ids) for t, ids, _ in parts])
        server.push_many(step, parts)
        for t, ids, g in parts:
            stores[t].pull(ids)
            stores[t].push(ids, g, distinct=True)
    assert counts == [4] * len(server.sets)  # one per pull, none per push
    (parts,) = _message(4, specs)
    server.push_many(4, parts)  # no pull before it: looked up
    assert counts == [5] * len(server.sets)
    for t, ids, g in parts:
        stores[t].push(ids, g, distinct=True)
    for t in range(TABLES):
        ids = torch.arange(VOCAB)
        assert torch.equal(server.pull(t, ids), stores[t].pull(ids))


def test_a_row_evicted_between_its_pull_and_its_push_is_looked_up_again() -> None:
    specs = _specs("adam", evict_after=2)
    server = Shard(specs, synchronous=False)
    stores = _stores(specs)
    (first,) = _message(0, specs)
    server.pull_many([(t, ids) for t, ids, _ in first])
    for t, ids, _ in first:
        stores[t].pull(ids)
    # Four other updates evict the first message's rows and hand their slots to new ones.
    for step in range(1, 5):
        (parts,) = _message(100 + step, specs)
        server.push_many(step, parts)
        for t, ids, g in parts:
            stores[t].push(ids, g, distinct=True)
    assert sum(t.store.evicted for t in server.tables) > 0
    server.push_many(5, first)
    for t, ids, g in first:
        stores[t].push(ids, g, distinct=True)
    assert [t.store.evicted for t in server.tables] == [s.evicted for s in stores]
    for t in range(TABLES):
        ids = torch.arange(VOCAB)
        assert torch.equal(server.pull(t, ids), stores[t].pull(ids))
