"""The plain single-process PyTorch loop the runtime is measured against.

Same model, data, seed and optimisers (torch's own: the dense one on dense layers, each
table's sparse one on `nn.Embedding(sparse=True)` tables whose rows start as a parameter
server's would, see zoo/tables.py) as a runtime job, without processes, pipelining or a
parameter server: the sync-equivalence tests compare losses with it, and the benchmark
compares throughput with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

from heterps_core.ps import optim
from heterps_core.runtime.datasource import replica_batches
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.spec import TrainSettings
from heterps_core.runtime.tables import sparse_tables
from heterps_core.zoo.base import ChainModel


@dataclass(frozen=True)
class PlainResult:
    losses: list[float]
    throughput: float  # samples/s after the first step (as the runtime measures it)
    elapsed_s: float


def train_plain(train: TrainSettings, threads: int = 1) -> PlainResult:
    torch.set_num_threads(threads)
    zoo = resolve_model(train.model)
    config = zoo.config(train.size)
    model = zoo.build(config, seed=train.seed)
    optimizers = plain_optimizers(model, train)
    batches = replica_batches(train, zoo, config)  # the stream the runtime reads
    losses: list[float] = []
    start = time.perf_counter()
    first_done = start
    for step in range(train.steps):
        inputs, labels = next(batches)
        loss = model.loss(model(inputs), labels)
        loss.backward()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if step == 0:
            first_done = time.perf_counter()
    end = time.perf_counter()
    steady = (train.steps - 1) * train.batch_size / (end - first_done) if train.steps > 1 else 0.0
    return PlainResult(losses, steady, end - start)


def plain_optimizers(model: nn.Module, train: TrainSettings) -> list[torch.optim.Optimizer]:
    """torch's own optimisers for the settings a job applies: each sparse table's (as
    `nn.Embedding(sparse=True)` with SparseAdam, sparse Adagrad or SGD), and the dense one
    on every other parameter."""
    tables = sparse_tables(model) if isinstance(model, ChainModel) else []
    held = {id(ref.weight) for ref in tables}
    dense = [p for p in model.parameters() if id(p) not in held]
    out = [
        optim.parse(train.table_optimizer(ref.table), f"table {ref.table}").torch_sparse(
            [p for p in ref.module.parameters(recurse=False)]
        )
        for ref in tables
    ]
    if dense:
        out.append(optim.create(train.optimizer, lr=train.lr).torch_dense(dense))
    return out
