"""A model whose tables are remote (rows of the mini-batch only, from sharded stores) trains
exactly like the plain model with torch's sparse optimisers."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from heterps_core.ps import RowInit, RowStore, create, fill_table_
from heterps_core.ps.optim import is_table, plain_optimizers
from heterps_core.ps.remote import BatchRows, RemoteTable, collect_ids, swap_in
from heterps_core.zoo import get as get_model
from heterps_core.zoo.base import ChainModel, Inputs
from heterps_core.zoo.tables import init_of, tables_on_meta

SHARDS = 2
STEPS = 12
BATCH = 32


def _row_init(module: nn.Module) -> RowInit:
    init = init_of(module)
    assert init is not None
    return RowInit(init.kind, init.scale, init.seed)


def _plain(name: str) -> tuple[ChainModel, list[str]]:
    zoo = get_model(name)
    model = zoo.build(zoo.config("tiny"), seed=3)
    paths = [p for p, m in model.named_modules() if is_table(m)]
    for path in paths:
        module = model.get_submodule(path)
        fill_table_(module.weight.data, _row_init(module))
    return model, paths


class _Shards:
    """Row g of table t on store g mod SHARDS, as the parameter server places it."""

    def __init__(self, model: ChainModel, paths: list[str], sparse: str) -> None:
        self.stores = []
        for path in paths:
            module = model.get_submodule(path)
            init = _row_init(module)
            dim = module.embedding_dim
            self.stores.append([RowStore(dim, init, create(sparse, lr=0.05))
                                for _ in range(SHARDS)])

    def fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        out = torch.empty(ids.numel(), self.stores[table][0].dim)
        for shard, store in enumerate(self.stores[table]):
            mine = ids % SHARDS == shard
            out[mine] = store.pull(ids[mine])
        return out

    def push(self, table: int, rows: BatchRows) -> None:
        grad = rows.gradient()
        for shard, store in enumerate(self.stores[table]):
            mine = rows.ids % SHARDS == shard
            store.push(rows.ids[mine], grad[mine], distinct=True)


def _split(inputs: Inputs, parts: int) -> list[Inputs]:
    chunks = {k: v.tensor_split(parts) for k, v in inputs.items()}
    return [{k: c[i] for k, c in chunks.items()} for i in range(parts)]


@pytest.mark.parametrize(
    ("model_name", "dense", "sparse"),
    [("ctr_dnn", "sgd", "sgd"), ("ctr_dnn", "adam", "adagrad"), ("ctr_dnn", "adam", "adam"),
     ("two_emb", "adam", "adam")],
)
def test_remote_tables_train_like_the_plain_model(model_name: str, dense: str, sparse: str) -> None:
    zoo = get_model(model_name)
    config = zoo.config("tiny")
    plain, paths = _plain(model_name)
    plain_opts = plain_optimizers(plain, create(dense, lr=0.01), create(sparse, lr=0.05))

    with tables_on_meta():
        remote = zoo.build(config, seed=3)
    shards = _Shards(plain, paths, sparse)
    tables = swap_in(remote, paths, shards.fetch)
    assert not any(p.is_meta for p in remote.parameters())  # no table left behind
    remote_opt = create(dense, lr=0.01).torch_dense(remote.parameters())

    batches = zoo.batches(config, BATCH, seed=3)
    for step in range(STEPS):
        inputs, labels = next(batches)
        plain_loss = plain.loss(plain(inputs), labels)
        plain_loss.backward()
        for opt in plain_opts:
            opt.step()
            opt.zero_grad()

        # Two micro-batches: one prefetch of the mini-batch's rows, gradients summed per row.
        looked_up = collect_ids(tables, lambda inputs=inputs: remote(inputs))
        for table, ids in zip(tables, looked_up, strict=True):
            unique, inverse = BatchRows.of(ids)
            table.begin(BatchRows(unique, shards.fetch(table.table, unique), inverse))
        loss = 0.0
        for part, part_labels in zip(_split(inputs, 2), labels.tensor_split(2), strict=True):
            micro = remote.loss(remote(part), part_labels) * (part_labels.shape[0] / BATCH)
            micro.backward()
            loss += float(micro.detach())
        for table in tables:
            assert table.rows is not None
            shards.push(table.table, table.rows)
            table.begin(None)
        remote_opt.step()
        remote_opt.zero_grad()
        assert loss == pytest.approx(float(plain_loss.detach()), abs=1e-5, rel=1e-5), step


def test_a_lookup_outside_the_prefetched_rows_fails_loudly() -> None:
    table = RemoteTable(nn.Embedding(10, 2, sparse=True), 0, lambda t, ids: torch.zeros(0, 2))
    table.begin(BatchRows(torch.tensor([1, 4]), torch.zeros(2, 2)))
    assert table(torch.tensor([4, 1, 4])).shape == (3, 2)
    with pytest.raises(RuntimeError, match="outside the rows fetched"):
        table(torch.tensor([2]))


def test_padding_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="padding_idx"):
        RemoteTable(nn.Embedding(10, 2, padding_idx=0, sparse=True), 0, lambda t, i: i)


def test_micro_batches_take_their_positions_in_order_and_others_still_resolve() -> None:
    looked_up = torch.tensor([[7, 3], [3, 9], [9, 9], [1, 7]])
    unique, inverse = BatchRows.of(looked_up)
    assert unique.tolist() == [1, 3, 7, 9]
    rows = BatchRows(unique, torch.zeros(4, 2), inverse)
    first = rows.local(looked_up[:2])
    assert first is not None and first.tolist() == [[2, 1], [1, 3]]
    assert rows._cursor == 4  # the fast path: the prefetch's inverse, not a search
    out_of_order = rows.local(torch.tensor([[1, 7]]))
    assert out_of_order is not None and out_of_order.tolist() == [[0, 2]]
    assert rows._cursor == 4
    assert rows.local(torch.tensor([5])) is None
