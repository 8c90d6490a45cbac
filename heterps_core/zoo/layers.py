"""Reusable chain layers: field embeddings, dense blocks and the final logit.

Each reads the context tensors it names and writes its own (zoo/base.py): a branch reads
what it needs where it was written, so nothing is carried through layers that do not use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from heterps_core.zoo.base import ChainLayer
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
    """Layer 0 of the CTR-style models: looks up every field's embedding.

    Writes `emb` [fields x dim, flattened] and, if `wide`, `wide` [1] (the first-order sum).
    With `concat_dense`, `emb` is [dense | field embeddings] instead: the MLP input of the
    models whose first dense layer reads both (one concatenation, as any such model makes).
    """

    def __init__(
        self,
        vocab_sizes: Sequence[int],
        dim: int,
        n_dense: int,
        wide: bool = False,
        name: str = "embedding",
        concat_dense: bool = True,
    ) -> None:
        self.n_dense = n_dense if concat_dense else 0
        width = self.n_dense + len(vocab_sizes) * dim
        writes: dict[str, tuple[int, ...]] = {"emb": (width,)}
        if wide:
            writes["wide"] = (1,)
        reads = ("sparse", "dense") if self.n_dense else ("sparse",)
        super().__init__(name, kind="embedding", shardable=True, reads=reads, writes=writes)
        self.embedding = FieldEmbedding(vocab_sizes, dim)
        self.wide = FieldEmbedding(vocab_sizes, 1) if wide else None

    @property
    def out_width(self) -> int:
        return self.writes["emb"][0]

    def forward(self, ids: torch.Tensor, dense: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        emb = self.embedding(ids).flatten(1)
        if dense is not None:
            emb = torch.cat([dense, emb], dim=1)
        if self.wide is None:
            return emb
        return emb, self.wide(ids).sum(dim=1)


class Dense(ChainLayer):
    """Linear (+ activation): reads one named tensor, writes one."""

    def __init__(self, name: str, reads: str, writes: str, in_features: int, out_features: int,
                 activation: str = "relu") -> None:
        super().__init__(name, kind="dense", reads=(reads,), writes={writes: (out_features,)})
        self.linear = nn.Linear(in_features, out_features)
        self.activation = _activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


class Logit(ChainLayer):
    """The final logit: linear(x) [+ the sum of extra one-column terms, e.g. a wide part]."""

    def __init__(self, name: str, reads: str, in_features: int,
                 add: Sequence[str] = ()) -> None:
        super().__init__(name, kind="dense", reads=(reads, *add), writes={"logit": ()})
        self.in_features = in_features
        self.linear = nn.Linear(in_features, 1)

    def forward(self, x: torch.Tensor, *terms: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        for term in terms:
            out = out + term
        return out.squeeze(1)


def _activation(name: str) -> nn.Module:
    activations: dict[str, type[nn.Module]] = {
        "relu": nn.ReLU,
        "tanh": nn.Tanh,
        "none": nn.Identity,
    }
    return activations[name]()


def mlp_chain(
    prefix: str, reads: str, in_features: int, hidden: Sequence[int]
) -> tuple[list[ChainLayer], str, int]:
    """`len(hidden)` ReLU layers from the tensor named `reads`; each writes its own name
    (`prefix` + number). Returns the layers, the last name and its width."""
    layers: list[ChainLayer] = []
    name, width = reads, in_features
    for i, size in enumerate(hidden):
        out = f"{prefix}{i + 1}"
        layers.append(Dense(out, name, out, width, size))
        name, width = out, size
    return layers, name, width


def bce_loss(output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sigmoid + binary cross-entropy on logits (the numerically stable form)."""
    return nn.functional.binary_cross_entropy_with_logits(output, labels.to(output.dtype))
