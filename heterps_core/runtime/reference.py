"""The plain single-process PyTorch loop the runtime is measured against.

Same model, data, seed and optimiser (SGD on dense and sparse parameters alike) as a
runtime job, without processes, pipelining or a parameter server: the sync-equivalence
tests compare losses with it, and the benchmark compares throughput with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from heterps_core.runtime.datasource import replica_batches
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.spec import TrainSettings


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
    optimizer = torch.optim.SGD(model.parameters(), lr=train.lr)
    batches = replica_batches(train, zoo, config)  # the stream the runtime reads
    losses: list[float] = []
    start = time.perf_counter()
    first_done = start
    for step in range(train.steps):
        inputs, labels = next(batches)
        loss = model.loss(model(inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if step == 0:
            first_done = time.perf_counter()
    end = time.perf_counter()
    steady = (train.steps - 1) * train.batch_size / (end - first_done) if train.steps > 1 else 0.0
    return PlainResult(losses, steady, end - start)
