"""A row's initial value depends on (seed, row id) only."""

from __future__ import annotations

import pytest
import torch

from heterps_core.ps import RowInit, fill_table_, initial_rows


def test_a_row_gets_the_same_value_whatever_it_is_asked_with() -> None:
    init = RowInit("normal", 0.01, seed=7)
    ids = torch.tensor([5, 1_000_000_007, 3, 5, 1_559_999_999])
    alone = torch.cat([initial_rows(ids[i : i + 1], 10, init) for i in range(ids.numel())])
    together = initial_rows(ids, 10, init)
    reversed_ = initial_rows(ids.flip(0), 10, init).flip(0)
    assert torch.equal(alone, together)
    assert torch.equal(together, reversed_)
    assert torch.equal(together[0], together[3])


def test_seeds_and_rows_differ() -> None:
    a = initial_rows(torch.arange(1000), 10, RowInit("normal", 1.0, seed=1))
    b = initial_rows(torch.arange(1000), 10, RowInit("normal", 1.0, seed=2))
    assert not torch.isclose(a, b).any()
    assert a.unique(dim=0).shape[0] == 1000


@pytest.mark.parametrize("dim", [1, 9, 10])
def test_normal_rows_have_the_asked_scale(dim: int) -> None:
    values = initial_rows(torch.arange(200_000), dim, RowInit("normal", 0.01, seed=3))
    assert values.shape == (200_000, dim) and values.dtype == torch.float32
    assert abs(float(values.mean())) < 1e-4
    assert float(values.std(dim=0).min()) == pytest.approx(0.01, rel=0.02)
    assert float(values.std(dim=0).max()) == pytest.approx(0.01, rel=0.02)


def test_uniform_and_zero_rows() -> None:
    uniform = initial_rows(torch.arange(100_000), 4, RowInit("uniform", 0.5, seed=3))
    assert float(uniform.min()) >= -0.5 and float(uniform.max()) <= 0.5
    assert float(uniform.std()) == pytest.approx(0.5 / 3**0.5, rel=0.02)
    assert not initial_rows(torch.arange(10), 4, RowInit("zeros", 1.0, seed=3)).any()


def test_an_unknown_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="row initialisation must be one of"):
        RowInit("gaussian", 0.01, seed=0)


def test_a_plain_table_filled_by_parts_equals_the_rows_a_server_creates() -> None:
    init = RowInit("normal", 0.01, seed=11)
    weight = torch.empty(70_000, 10)
    fill_table_(weight, init)
    ids = torch.tensor([0, 65_535, 65_536, 69_999])
    assert torch.equal(weight[ids], initial_rows(ids, 10, init))
    tail = fill_table_(torch.empty(100, 10), init, first_row=69_900)
    assert torch.equal(tail, weight[69_900:])
