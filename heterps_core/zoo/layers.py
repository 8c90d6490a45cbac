"""Reusable chain layers: field embeddings, (partial) dense blocks and parameter-free heads.

Branches are flattened by *carrying*: a layer works on a column slice of its input tensor and
passes the other columns through untouched, so every boundary is one [batch, width] tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from heterps_core.zoo.base import ChainLayer, Inputs
from heterps_core.zoo.tables import sparse_table


class FieldEmbedding(nn.Module):
    """One table per sparse field, stored as a single sparse `nn.Embedding` with row offsets.

    One table keeps the lookup to a single kernel; sparse gradients touch only the rows a batch
    used, as on a parameter server.
    """

    offsets: torch.Tensor

    def __init__(self, vocab_sizes: Sequence[int], dim: int) -> None:
        super().__init__()
        self.n_fields = len(vocab_sizes)
        self.dim = dim
        self.table = sparse_table(int(sum(vocab_sizes)), dim, "normal", 0.01)
        starts = [0]
        for size in vocab_sizes[:-1]:
            starts.append(starts[-1] + int(size))
        self.register_buffer("offsets", torch.tensor(starts, dtype=torch.long), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids [batch, fields] -> [batch, fields, dim]."""
        return self.table(ids + self.offsets)


class SparseInput(ChainLayer):
    """Layer 0 of the CTR-style models: dense features beside the flattened field embeddings.

    Output columns: [dense | field embeddings | wide (first-order) sum, if `wide`].
    """

    def __init__(
        self,
        vocab_sizes: Sequence[int],
        dim: int,
        n_dense: int,
        wide: bool = False,
        name: str = "embedding",
    ) -> None:
        super().__init__(name, kind="embedding", shardable=True)
        self.n_dense = n_dense
        self.embedding = FieldEmbedding(vocab_sizes, dim)
        self.wide = FieldEmbedding(vocab_sizes, 1) if wide else None

    @property
    def out_width(self) -> int:
        emb = self.embedding
        return self.n_dense + emb.n_fields * emb.dim + (1 if self.wide is not None else 0)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        ids = inputs["sparse"]
        parts = []
        if self.n_dense:
            parts.append(inputs["dense"])
        parts.append(self.embedding(ids).flatten(1))
        if self.wide is not None:
            parts.append(self.wide(ids).sum(dim=1))
        return torch.cat(parts, dim=1)


class PartialDense(ChainLayer):
    """Linear (+ activation) on columns [start, stop) of the input; other columns carried through.

    With start=0 and stop=None it is an ordinary fully connected layer.
    """

    def __init__(
        self,
        name: str,
        in_features: int,
        out_features: int,
        start: int = 0,
        stop: int | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__(name, kind="dense")
        self.start = start
        self.stop = start + in_features if stop is None else stop
        if self.stop - self.start != in_features:
            raise ValueError(f"{name}: column slice does not match in_features={in_features}")
        self.linear = nn.Linear(in_features, out_features)
        self.activation = _activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.activation(self.linear(x[:, self.start : self.stop]))
        return torch.cat([x[:, : self.start], y, x[:, self.stop :]], dim=1)


class AddCarried(ChainLayer):
    """Final logit = linear(x[:, :n]) + sum of the carried columns x[:, n:] (e.g. a wide part)."""

    def __init__(self, name: str, in_features: int) -> None:
        super().__init__(name, kind="dense")
        self.in_features = in_features
        self.linear = nn.Linear(in_features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        deep = self.linear(x[:, : self.in_features])
        return (deep + x[:, self.in_features :].sum(dim=1, keepdim=True)).squeeze(1)


def _activation(name: str) -> nn.Module:
    activations: dict[str, type[nn.Module]] = {
        "relu": nn.ReLU,
        "tanh": nn.Tanh,
        "none": nn.Identity,
    }
    return activations[name]()


def mlp_chain(
    prefix: str, in_features: int, hidden: Sequence[int], start: int = 0, stop: int | None = None
) -> tuple[list[ChainLayer], int]:
    """`len(hidden)` ReLU layers on a column slice; returns the layers and the final width."""
    layers: list[ChainLayer] = []
    width = in_features
    for i, size in enumerate(hidden):
        layers.append(PartialDense(f"{prefix}{i + 1}", width, size, start=start,
                                   stop=stop if i == 0 else None))
        stop = None
        width = size
    return layers, width


def bce_loss(output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sigmoid + binary cross-entropy on logits (the numerically stable form)."""
    return nn.functional.binary_cross_entropy_with_logits(output, labels.to(output.dtype))
