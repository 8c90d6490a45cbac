"""A plain single-process training loop for zoo models (tests, profiling checks, examples).

Sparse embedding tables get `SparseAdam` (their gradients are sparse, as on a parameter
server); every other parameter gets `Adam`.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from heterps_core.zoo.base import Batch, ChainModel


class ChainOptimizer:
    """SparseAdam for sparse tables plus Adam for dense parameters, stepped together."""

    def __init__(self, model: nn.Module, lr: float = 1e-3, sparse_lr: float | None = None) -> None:
        sparse, dense = split_parameters(model)
        self.optimizers: list[torch.optim.Optimizer] = []
        if sparse:
            self.optimizers.append(torch.optim.SparseAdam(sparse, lr=sparse_lr or lr))
        if dense:
            self.optimizers.append(torch.optim.Adam(dense, lr=lr))

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()


def split_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(parameters of sparse embeddings, all other parameters)."""
    sparse_ids: set[int] = set()
    sparse: list[nn.Parameter] = []
    for module in model.modules():
        if isinstance(module, nn.Embedding | nn.EmbeddingBag) and module.sparse:
            for p in module.parameters(recurse=False):
                sparse_ids.add(id(p))
                sparse.append(p)
    dense = [p for p in model.parameters() if id(p) not in sparse_ids]
    return sparse, dense


def train(
    model: ChainModel, batches: Iterator[Batch], steps: int, lr: float = 1e-3,
    sparse_lr: float | None = None,
) -> list[float]:
    """Train for `steps` batches; returns the loss of every step."""
    optimizer = ChainOptimizer(model, lr=lr, sparse_lr=sparse_lr)
    model.train()
    losses = []
    for _ in range(steps):
        inputs, labels = next(batches)
        optimizer.zero_grad()
        loss = model.loss(model(inputs), labels)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses
