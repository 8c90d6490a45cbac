"""The id -> slot index against a dict, through growth, collisions and rebuilds; a mini-batch's
distinct ids with and without a bound."""

from __future__ import annotations

import numpy as np
import pytest

from heterps_core.ps.index import RowIndex, distinct


def test_lookups_match_a_dict_through_growth() -> None:
    rng = np.random.default_rng(0)
    index = RowIndex()
    reference: dict[int, int] = {}
    for _ in range(20):
        keys = np.unique(rng.integers(0, 2**40, 5000))
        keys = keys[[int(k) not in reference for k in keys]]
        slots = np.arange(len(reference), len(reference) + keys.size)
        index.insert(keys, slots)
        reference.update(zip(keys.tolist(), slots.tolist(), strict=True))
        assert index.size == len(reference)
        assert index.size <= index.max_load * index.capacity
    held = rng.choice(np.array(list(reference)), 3000)
    probe = np.concatenate([held, rng.integers(0, 2**40, 50)])
    expected = np.array([reference.get(int(k), -1) for k in probe])
    assert np.array_equal(index.lookup(probe), expected)


def test_keys_that_share_a_home_probe_on() -> None:
    index = RowIndex(capacity=1024)
    candidates = np.random.default_rng(1).integers(0, 2**40, 400_000)
    homes = index._home(candidates)
    keys = np.unique(candidates[homes == np.bincount(homes).argmax()])[:200]
    others = np.unique(candidates[homes != np.bincount(homes).argmax()])[:200]
    assert keys.size >= 200 and np.unique(index._home(keys)).size == 1
    both = np.concatenate([keys, others])
    index.insert(both, np.arange(both.size))
    assert index.capacity == 1024  # no growth: the probes, not a bigger table, sorted it out
    assert np.array_equal(index.lookup(both), np.arange(both.size))


def test_duplicate_lookups_and_absent_keys() -> None:
    index = RowIndex()
    index.insert(np.array([10, 20, 30]), np.array([0, 1, 2]))
    assert index.lookup(np.array([20, 20, 99, 10])).tolist() == [1, 1, -1, 0]


def test_items_in_slot_order_and_rebuild() -> None:
    index = RowIndex()
    index.insert(np.array([7, 3, 9, 1]), np.array([2, 0, 3, 1]))
    keys, slots = index.items()
    assert keys.tolist() == [3, 1, 7, 9] and slots.tolist() == [0, 1, 2, 3]
    index.rebuild(np.array([1, 9]), np.array([1, 3]))
    assert index.size == 2
    assert index.lookup(np.array([3, 1, 7, 9])).tolist() == [-1, 1, -1, 3]


def test_a_bad_load_factor_is_refused() -> None:
    with pytest.raises(ValueError, match="max_load"):
        RowIndex(max_load=0.99)


@pytest.mark.parametrize("below", [None, 300, 5_000, 10**9])
def test_distinct_with_a_bound_gives_the_sorts_answer(below: int | None) -> None:
    # Marking (a small bound) and sorting (none, or one too large to mark) agree, repeats
    # and order included: the pull and the lookups' positions depend on both.
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 300, size=2_000).astype(np.int64)
    unique, inverse = distinct(keys, below)
    assert np.array_equal(unique, np.unique(keys))
    assert np.array_equal(unique[inverse], keys)


@pytest.mark.parametrize("bad", [-1, 300])
def test_distinct_falls_back_to_the_sort_for_keys_outside_the_bound(bad: int) -> None:
    keys = np.array([5, bad, 5, 7], dtype=np.int64)
    unique, inverse = distinct(keys, below=300)
    assert np.array_equal(unique, np.unique(keys))
    assert np.array_equal(unique[inverse], keys)


def test_distinct_of_no_keys_is_empty() -> None:
    unique, inverse = distinct(np.empty(0, dtype=np.int64), below=10)
    assert unique.size == inverse.size == 0
