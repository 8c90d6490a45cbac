"""The id -> slot index against a dict, through growth, collisions and rebuilds."""

from __future__ import annotations

import numpy as np
import pytest

from heterps_core.ps.index import RowIndex


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
