"""Parameter-light chain layers that combine what earlier layers produced (FM, DLRM
interaction, matching scores, NCE scores)."""

from __future__ import annotations

import torch
from torch import nn

from heterps_core.zoo.base import ChainLayer


class FMInteraction(ChainLayer):
    """DeepFM's second-order term over the field embeddings in columns [start, start + f*k),
    added to the last column (the first-order sum); everything else passes through."""

    def __init__(self, name: str, start: int, n_fields: int, dim: int) -> None:
        super().__init__(name, kind="dense")
        self.start, self.n_fields, self.dim = start, n_fields, dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stop = self.start + self.n_fields * self.dim
        emb = x[:, self.start : stop].reshape(-1, self.n_fields, self.dim)
        fm = 0.5 * (emb.sum(dim=1).pow(2) - emb.pow(2).sum(dim=1)).sum(dim=1, keepdim=True)
        return torch.cat([x[:, :-1], x[:, -1:] + fm], dim=1)


class DotInteraction(ChainLayer):
    """DLRM's interaction: pairwise dot products of the bottom-MLP output and every field
    embedding (all `n_vectors` vectors of size `dim` at the start of the input), kept beside
    the bottom-MLP output."""

    pairs: torch.Tensor

    def __init__(self, name: str, n_vectors: int, dim: int) -> None:
        super().__init__(name, kind="dense")
        self.n_vectors, self.dim = n_vectors, dim
        rows, cols = torch.triu_indices(n_vectors, n_vectors, offset=1)
        self.register_buffer("pairs", rows * n_vectors + cols, persistent=False)

    @property
    def out_width(self) -> int:
        return self.dim + self.n_vectors * (self.n_vectors - 1) // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        vectors = x[:, : self.n_vectors * self.dim].reshape(-1, self.n_vectors, self.dim)
        dots = torch.bmm(vectors, vectors.transpose(1, 2)).flatten(1)[:, self.pairs]
        return torch.cat([vectors[:, 0], dots], dim=1)


class CosineScore(ChainLayer):
    """Matching score: a learned scale and bias on the cosine of two equal-width halves."""

    def __init__(self, name: str, width: int) -> None:
        super().__init__(name, kind="dense")
        self.width = width
        self.scale = nn.Parameter(torch.tensor(5.0))
        self.bias = nn.Parameter(torch.tensor(0.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u, v = x[:, : self.width], x[:, self.width : 2 * self.width]
        return self.scale * nn.functional.cosine_similarity(u, v, dim=1) + self.bias


class NCEScore(ChainLayer):
    """Skip-gram scores: centre vector (first `dim` columns) against 1 + K output vectors,
    each stored as `dim` weights plus a bias; returns [batch, 1 + K] logits."""

    def __init__(self, name: str, dim: int, n_targets: int) -> None:
        super().__init__(name, kind="dense")
        self.dim, self.n_targets = dim, n_targets

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centre = x[:, : self.dim]
        targets = x[:, self.dim :].reshape(-1, self.n_targets, self.dim + 1)
        scores = torch.bmm(targets[:, :, : self.dim], centre.unsqueeze(2)).squeeze(2)
        return scores + targets[:, :, self.dim]
