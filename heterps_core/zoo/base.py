"""The contract every zoo model keeps, so the planner, profiler and runtime can share it.

A model is a *chain* of layers (what the planner sees). Layer 0 receives the raw inputs (a
dict of tensors from the data generator); every later layer receives exactly one float
tensor of shape [batch, ...] and returns one. A model with branches (towers, a bottom MLP
beside embeddings) is flattened in topological order, carrying untouched parts of the
tensor through. The runtime can therefore cut the chain between any two layers and send a
single tensor (and its gradient) across the boundary.

`ChainModel.loss(output, labels)` has no parameters of its own, so the last stage computes
the loss without any other stage's state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

Inputs = dict[str, torch.Tensor]
Batch = tuple[Inputs, torch.Tensor]  # (inputs, labels)


class ChainLayer(nn.Module):
    """One planner-visible layer. `kind` is "embedding" for sparse tables, else "dense"."""

    def __init__(self, name: str, kind: str = "dense", shardable: bool = False) -> None:
        super().__init__()
        self.layer_name = name
        self.kind = kind
        self.shardable = shardable

    @property
    def is_sparse(self) -> bool:
        return self.kind == "embedding"


class ChainModel(nn.Module):
    """A sequence of `ChainLayer`s plus a parameter-free loss."""

    def __init__(self, layers: list[ChainLayer]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        x: Any = inputs
        for layer in self.layers:
            x = layer(x)
        return x

    def run_layers(self, x: Any, first: int, last: int) -> torch.Tensor:
        """Layers first..last inclusive: the unit of work of one pipeline stage."""
        for layer in list(self.layers)[first : last + 1]:
            x = layer(x)
        return x

    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


@dataclass(frozen=True)
class ModelConfig:
    """Sizes a model is built with; `production` variants have tables of tens of GB."""

    vocab_sizes: tuple[int, ...] = ()
    embedding_dim: int = 10
    hidden: tuple[int, ...] = (400, 400, 400)
    extra: dict[str, Any] = field(default_factory=dict)


class ZooModel:
    """A registered zoo entry: builds the module and generates matching synthetic data."""

    name: ClassVar[str]
    description: ClassVar[str]
    default_batch_size: ClassVar[int] = 1000
    # What its users train it with (heterps_core.ps.optim): Adam for the CTR models.
    default_optimizer: ClassVar[str] = "sgd"

    def config(self, size: str = "small") -> ModelConfig:
        """`small` for tests and this machine, `production` for planning at real scale."""
        raise NotImplementedError

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        raise NotImplementedError

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """An endless, seeded stream of synthetic batches with realistic skew."""
        raise NotImplementedError


@dataclass(frozen=True)
class LayerSpec:
    """What the planner sees of one chain layer, derived without allocating its tables."""

    name: str
    kind: str
    parameters: int
    shardable: bool

    @property
    def is_sparse(self) -> bool:
        return self.kind == "embedding"


def layer_specs(model: ChainModel) -> list[LayerSpec]:
    """The declared chain of a built model (works on the `meta` device, so tables of tens of GB
    cost nothing to describe)."""
    return [
        LayerSpec(
            name=layer.layer_name,
            kind=layer.kind,
            parameters=sum(p.numel() for p in layer.parameters()),
            shardable=layer.shardable,
        )
        for layer in model.layers
        if isinstance(layer, ChainLayer)
    ]


def chain_of(zoo_model: ZooModel, config: ModelConfig) -> list[LayerSpec]:
    """`zoo_model`'s layer chain for `config`, built on the meta device (no memory used)."""
    with torch.device("meta"):
        model = zoo_model.build(config)
    return layer_specs(model)


def split_inputs(inputs: Inputs, parts: int, device: torch.device) -> list[Inputs]:
    """Micro-batches of a batch-first inputs dict, on `device`."""
    split = {key: value.to(device).tensor_split(parts) for key, value in inputs.items()}
    return [{key: chunks[i] for key, chunks in split.items()} for i in range(parts)]
