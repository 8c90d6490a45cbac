"""Tables whose rows are a hash of (seed, row id): the same model whether a process fills its
tables or not, and the rows a parameter server creates."""

from __future__ import annotations

import pytest
import torch

from heterps_core.ps import initial_rows
from heterps_core.zoo import get, names
from heterps_core.zoo.tables import init_of, materialize, sparse_table, tables_on_meta


def _zoo(name: str):
    model = get(name)
    return model() if isinstance(model, type) else model


@pytest.mark.parametrize("name", names())
def test_a_model_built_without_its_tables_has_the_same_dense_layers(name: str) -> None:
    zoo = _zoo(name)
    config = zoo.config("tiny")
    full = zoo.build(config, seed=7).state_dict()
    with tables_on_meta():
        partial = zoo.build(config, seed=7).state_dict()
    on_meta = [key for key, value in partial.items() if value.is_meta]
    assert on_meta, "every zoo model has a sparse table"
    for key, value in partial.items():
        if key not in on_meta:
            assert torch.equal(value, full[key]), key


def test_materialize_gives_the_rows_of_a_full_build_and_of_a_server() -> None:
    rows, dim = 70_000, 3  # more than one fill block
    torch.manual_seed(11)
    full = sparse_table(rows, dim, "uniform", 0.5)
    torch.manual_seed(11)
    with tables_on_meta():
        lazy = sparse_table(rows, dim, "uniform", 0.5)
    assert lazy.weight.is_meta
    materialize(lazy)
    assert not lazy.weight.is_meta and torch.equal(lazy.weight, full.weight)
    init = init_of(lazy)
    assert init is not None
    ids = torch.tensor([0, 65_536, 69_999])
    assert torch.equal(full.weight.detach()[ids], initial_rows(ids, dim, init.rows))
    values = full.weight.detach()
    assert float(values.abs().max()) <= 0.5 and float(values.std()) > 0.2


def test_a_table_uses_one_draw_of_the_global_stream_whatever_its_size() -> None:
    torch.manual_seed(0)
    sparse_table(10, 2)
    after_small = torch.rand(1)
    torch.manual_seed(0)
    sparse_table(100_000, 2)
    assert torch.equal(torch.rand(1), after_small)


def test_an_unknown_initialisation_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown table initialisation 'xavier'"):
        sparse_table(10, 2, "xavier")
