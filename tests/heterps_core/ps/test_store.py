"""A shard's store: rows made when touched, order-free values, eviction, checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from heterps_core.ps import RowInit, RowStore, WeightRows, create, initial_rows

DIM = 4
INIT = RowInit("normal", 0.01, seed=9)
VOCAB = 1_560_000_000  # CTR-DNN production's row count: never allocated


def _train(store: RowStore, steps: range, seed: int = 0) -> list[torch.Tensor]:
    """Pull, make up a gradient from the rows, push; returns what was pulled."""
    pulled = []
    for step in steps:
        gen = torch.Generator().manual_seed(seed * 10_000 + step)
        ids = torch.randint(0, VOCAB, (64,), generator=gen) % (1000 + 50 * step)
        unique = ids.unique()
        rows = store.pull(unique)
        pulled.append(rows)
        store.push(unique, rows * 3.0 + 0.1, distinct=True)
    return pulled


def test_only_touched_rows_take_memory() -> None:
    store = RowStore(DIM, INIT, create("adam"))
    ids = torch.tensor([0, VOCAB - 1, 123_456_789, 0])
    values = store.pull(ids)
    assert store.rows == 3
    assert torch.equal(values, initial_rows(ids, DIM, INIT))
    assert store.nbytes < 1_000_000


def test_first_values_do_not_depend_on_the_order_of_first_touches() -> None:
    ids = torch.randint(0, VOCAB, (5000,), generator=torch.Generator().manual_seed(2))
    a, b = RowStore(DIM, INIT, create("sgd")), RowStore(DIM, INIT, create("sgd"))
    a.pull(ids)
    for part in ids.flip(0).split(7):
        b.pull(part)
    assert torch.equal(a.pull(ids), b.pull(ids))


def test_memory_grows_with_rows_touched() -> None:
    store = RowStore(10, INIT, create("adam"), chunk_rows=1 << 14)
    sizes = []
    for part in torch.arange(0, 100_000).mul(7_777).split(25_000):
        store.pull(part)
        sizes.append(store.nbytes / store.rows)
    raw = 10 * 4 * 3  # row + two Adam moments, float32
    assert store.rows == 100_000
    assert max(sizes[1:]) < 2 * raw


def test_eviction_is_off_by_default() -> None:
    store = RowStore(DIM, INIT, create("adam"))
    _train(store, range(50))
    assert store.evicted == 0 and store.touched is None


def test_rows_untouched_for_n_updates_are_evicted_with_their_state() -> None:
    store = RowStore(DIM, INIT, create("adam", lr=0.1), evict_after=5)
    hot, cold = torch.tensor([1, 2]), torch.tensor([3])
    store.pull(cold)
    store.push(cold, torch.ones(1, DIM), distinct=True)
    for _ in range(9):
        store.push(hot, torch.ones(2, DIM), distinct=True)
    # Update 10 evicts what was last touched before update 5: row 3 (touched at update 1).
    assert store.rows == 2 and store.evicted == 1
    assert len(store.free) == 1
    again = store.pull(cold)  # back at its initial value, state reset, its slot reused
    assert torch.equal(again, initial_rows(cold, DIM, INIT))
    assert len(store.free) == 0 and store.high == 3
    block = store.arena.gather(store.slots(cold))
    assert not block[:, DIM:].any()
    assert not torch.equal(store.pull(hot), initial_rows(hot, DIM, INIT))


@pytest.mark.parametrize("evict_after", [None, 4])
def test_a_restored_store_continues_exactly_as_the_uninterrupted_one(
    tmp_path: Path, evict_after: int | None
) -> None:
    whole = RowStore(DIM, INIT, create("adam"), evict_after=evict_after, chunk_rows=1024)
    _train(whole, range(30))
    torch.save(whole.state_dict(), tmp_path / "shard.pt")
    expected = _train(whole, range(30, 45))

    restored = RowStore(DIM, INIT, create("adam"), evict_after=evict_after, chunk_rows=1024)
    restored.load_state_dict(torch.load(tmp_path / "shard.pt", weights_only=False))
    assert restored.steps == 30
    got = _train(restored, range(30, 45))
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b)
    assert restored.rows == whole.rows and restored.evicted == whole.evicted


def test_a_checkpoint_of_another_table_is_refused() -> None:
    store = RowStore(DIM, INIT, create("adam"))
    with pytest.raises(ValueError, match="checkpoint holds dim 4 rows for adam"):
        RowStore(8, INIT, create("adam")).load_state_dict(store.state_dict())


def test_a_table_the_model_initialised_itself_gives_its_own_first_rows() -> None:
    weight = torch.randn(50, DIM)
    store = RowStore(DIM, WeightRows(weight), create("sgd", lr=1.0))
    ids = torch.tensor([3, 49])
    assert torch.equal(store.pull(ids), weight[ids])
    store.push(ids, torch.ones(2, DIM), distinct=True)
    assert torch.equal(store.pull(ids), weight[ids] - 1.0)
