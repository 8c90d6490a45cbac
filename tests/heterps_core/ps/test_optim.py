"""Server-side sparse optimisers against torch's own, on the same gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from heterps_core.ps import RowInit, RowStore, UnknownOptimizerError, create, fill_table_, names
from heterps_core.ps.optim import InvalidOptimizerError, parse

ROWS, DIM = 400, 6
INIT = RowInit("normal", 0.1, seed=5)


def _torch_table(name: str, lr: float) -> tuple[nn.Embedding, torch.optim.Optimizer]:
    table = nn.Embedding(ROWS, DIM, sparse=True)
    fill_table_(table.weight.data, INIT)
    return table, create(name, lr=lr).torch_sparse(table.parameters())


def _store_rows(stores: list[RowStore]) -> torch.Tensor:
    out = torch.empty(ROWS, DIM)
    for shard, store in enumerate(stores):
        ids = torch.arange(shard, ROWS, len(stores))
        out[ids] = store.pull(ids)
    return out


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("name", ["sgd", "adagrad", "adam"])
def test_shards_applying_a_gradient_in_parts_match_torch(name: str, shards: int) -> None:
    """torch steps the whole table; each shard gets its rows of the same coalesced gradient
    (an empty part too: it still counts as a step)."""
    table, reference = _torch_table(name, lr=0.05)
    stores = [RowStore(DIM, INIT, create(name, lr=0.05)) for _ in range(shards)]
    gen = torch.Generator().manual_seed(0)
    target = torch.randn(ROWS, DIM, generator=gen)
    for step in range(40):
        # The first steps touch few rows: later ones meet rows whose state is still fresh.
        high = 20 if step < 10 else ROWS
        ids = torch.randint(0, high, (48,), generator=gen)
        ((table(ids) - target[ids]) ** 2).sum().backward()
        grad = table.weight.grad
        assert grad is not None
        grad = grad.coalesce()
        rows, values = grad.indices()[0], grad.values()
        reference.step()
        reference.zero_grad()
        for shard, store in enumerate(stores):
            mine = rows % shards == shard
            store.push(rows[mine], values[mine], distinct=True)
    assert all(store.steps == 40 for store in stores)
    torch.testing.assert_close(_store_rows(stores), table.weight.detach(), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name", ["sgd", "adagrad", "adam"])
def test_a_loop_through_the_store_matches_a_plain_sparse_loop(name: str) -> None:
    """Pull the unique rows, look up locally, push one gradient row per unique row: the
    losses of a plain nn.Embedding(sparse=True) loop with torch's optimiser."""
    table, reference = _torch_table(name, lr=0.02)
    store = RowStore(DIM, INIT, create(name, lr=0.02))
    gen = torch.Generator().manual_seed(1)
    target = torch.randn(ROWS, DIM, generator=gen)
    for _ in range(30):
        ids = torch.randint(0, ROWS, (32, 3), generator=gen)
        plain = ((table(ids) - target[ids]) ** 2).mean()
        plain.backward()
        reference.step()
        reference.zero_grad()

        unique, inverse = torch.unique(ids, return_inverse=True)
        local = store.pull(unique).requires_grad_(True)
        ours = ((nn.functional.embedding(inverse, local) - target[ids]) ** 2).mean()
        ours.backward()
        assert local.grad is not None
        store.push(unique, local.grad, distinct=True)
        assert float(ours.detach()) == pytest.approx(float(plain.detach()), rel=1e-5, abs=1e-5)
    torch.testing.assert_close(store.pull(torch.arange(ROWS)), table.weight.detach(),
                               atol=1e-6, rtol=1e-6)


def test_repeated_ids_are_summed_before_the_update() -> None:
    repeated = RowStore(DIM, INIT, create("adam"))
    summed = RowStore(DIM, INIT, create("adam"))
    grads = torch.randn(4, DIM)
    repeated.push(torch.tensor([3, 8, 3, 3]), grads)
    summed.push(torch.tensor([3, 8]), torch.stack([grads[0] + grads[2] + grads[3], grads[1]]),
                distinct=True)
    both = torch.tensor([3, 8])
    torch.testing.assert_close(repeated.pull(both), summed.pull(both))


def test_lazy_state_leaves_rows_outside_the_gradient_alone() -> None:
    store = RowStore(DIM, INIT, create("adam", lr=0.1))
    before = store.pull(torch.tensor([1, 2]))
    for _ in range(5):
        store.push(torch.tensor([1]), torch.ones(1, DIM), distinct=True)
    after = store.pull(torch.tensor([1, 2]))
    assert not torch.equal(after[0], before[0])
    assert torch.equal(after[1], before[1])
    block = store.arena.gather(store.slots(torch.tensor([2])))
    assert not block[:, DIM:].any()  # row 2's moments never advanced


def test_the_registry_and_its_errors() -> None:
    assert names() == ["adagrad", "adam", "sgd"]
    adam = create("adam", lr=0.01, eps=1e-6)
    assert adam.config() == {"name": "adam", "lr": 0.01, "eps": 1e-6}
    assert create("adagrad").eps == 1e-10
    with pytest.raises(UnknownOptimizerError, match="optimizer must be one of adagrad, adam, sgd"):
        create("lamb")
    with pytest.raises(ValueError, match="adam: lr must be positive"):
        create("adam", lr=0.0)


def test_optimizer_settings_parse_or_name_the_problem() -> None:
    assert parse("adam").config() == {"name": "adam", "lr": 0.001, "eps": 1e-8}
    assert parse(" adagrad:lr=0.05, eps=1e-6 ").config() == {
        "name": "adagrad", "lr": 0.05, "eps": 1e-6
    }
    for text, problem in [
        ("lamb", "sparse_optimizer: must be one of adagrad, adam, sgd, got 'lamb'"),
        ("adam:lr=fast", "sparse_optimizer: lr must be a number, got 'fast'"),
        ("adam:beta=0.9", "sparse_optimizer: 'beta=0.9' is not lr=NUMBER or eps=NUMBER"),
        ("sgd:lr=-1", "sparse_optimizer: sgd: lr must be positive"),
    ]:
        with pytest.raises(InvalidOptimizerError, match=problem):
            parse(text, "sparse_optimizer")
