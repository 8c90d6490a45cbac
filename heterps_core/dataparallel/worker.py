"""One data-parallel worker: its own model replica, optimiser and shard of the data.

The emulated backend's workers hold whole replicas, tables included, each with torch's
optimisers (the sparse one on the tables, `ps.optim.plain_optimizers`). A process worker's
tables stay on the parameter server (`rows`, see rows.py): its model holds only the dense
layers, its optimiser updates only them, and every step pulls and pushes table rows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn

from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.flat import get_flat, set_flat
from heterps_core.dataparallel.rows import Rows
from heterps_core.ps import optim
from heterps_core.zoo.base import ChainModel

# Called between the backward pass and the optimiser step with the dense parameters
# (BSP's all-reduce of their gradients).
GradientHook = Callable[[list[nn.Parameter]], None]


class Worker:
    def __init__(
        self, index: int, model: ChainModel, stream: ShardStream, batch_size: int,
        lr: float, momentum: float, optimizer: str = "sgd", rows: Rows | None = None,
    ) -> None:
        self.index = index
        self.model = model
        self.stream = stream
        self.batch_size = batch_size
        self.lr, self.momentum, self.optimizer_name = lr, momentum, optimizer
        self.rows = rows
        self.steps = 0  # steps taken: the round number of this worker's row pushes
        self.optimizers = optimizers(model, optimizer, lr, momentum)

    def step(self, batch_size: int | None = None, reduce: GradientHook | None = None,
             row_scale: float = 1.0) -> float:
        """One optimiser step on the next batch of this worker's shard; the training loss."""
        inputs, labels = self.stream.take(batch_size or self.batch_size)
        if self.rows is not None:
            self.rows.begin(self.steps, lambda: self.model(inputs))
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss = self.model.loss(self.model(inputs), labels)
        loss.backward()
        if self.rows is not None:  # first, so the rows travel while the dense grads reduce
            self.rows.push(self.steps, row_scale)
        if reduce is not None:
            reduce([p for p in self.model.parameters() if p.grad is not None])
        for optimizer in self.optimizers:
            optimizer.step()
        self.steps += 1
        return float(loss.detach())

    def scratch(self, stream: ShardStream) -> Worker:
        """A copy that trains on `stream` without touching this worker's model, optimiser
        state or the server's rows (profiling)."""
        model = copy.deepcopy(self.model)
        rows = self.rows.local_copy(model) if self.rows is not None else None
        return Worker(self.index, model, stream, self.batch_size, self.lr, self.momentum,
                      self.optimizer_name, rows)

    def load(self, flat: torch.Tensor) -> None:
        set_flat(self.model, flat)

    def params(self) -> torch.Tensor:
        return get_flat(self.model)


def optimizers(model: nn.Module, name: str, lr: float,
               momentum: float = 0.0) -> list[torch.optim.Optimizer]:
    """torch's optimiser `name` on the dense parameters and its sparse form on the sparse
    tables a model still holds (SGD, with momentum, on all of them as one)."""
    if name == "sgd":
        return [torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)]
    return optim.plain_optimizers(model, optim.create(name, lr), optim.create(name, lr))
