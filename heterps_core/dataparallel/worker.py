"""One data-parallel worker: its own model replica, optimiser and shard of the data."""

from __future__ import annotations

import torch

from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.flat import get_flat, set_flat
from heterps_core.zoo.base import ChainModel


class Worker:
    def __init__(
        self, index: int, model: ChainModel, stream: ShardStream, batch_size: int,
        lr: float, momentum: float,
    ) -> None:
        self.index = index
        self.model = model
        self.stream = stream
        self.batch_size = batch_size
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    def step(self, batch_size: int | None = None) -> float:
        """One optimiser step on the next batch of this worker's shard; the training loss."""
        inputs, labels = self.stream.take(batch_size or self.batch_size)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model.loss(self.model(inputs), labels)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def load(self, flat: torch.Tensor) -> None:
        set_flat(self.model, flat)

    def params(self) -> torch.Tensor:
        return get_flat(self.model)
