"""Parameter-light chain layers that combine what earlier layers produced (FM, DLRM
interaction, matching scores, NCE scores)."""

from __future__ import annotations

import torch
from torch import nn

from heterps_core.zoo.base import ChainLayer


class FMInteraction(ChainLayer):
    """DeepFM's second-order term over the field embeddings (columns [start, start + f*k) of
    `reads`, a view), added to the first-order sum `first`: writes `fm` [1]."""

    def __init__(self, name: str, reads: str, first: str, start: int, n_fields: int,
                 dim: int) -> None:
        super().__init__(name, kind="dense", reads=(reads, first), writes={"fm": (1,)})
        self.start, self.n_fields, self.dim = start, n_fields, dim

    def forward(self, x: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
        stop = self.start + self.n_fields * self.dim
        emb = x[:, self.start : stop].reshape(-1, self.n_fields, self.dim)
        fm = 0.5 * (emb.sum(dim=1).pow(2) - emb.pow(2).sum(dim=1)).sum(dim=1, keepdim=True)
        return first + fm


class DotInteraction(ChainLayer):
    """DLRM's interaction: pairwise dot products of the bottom-MLP output `bottom` [dim] and
    every field embedding (`emb`, n_fields x dim), beside the bottom-MLP output."""

    pairs: torch.Tensor

    def __init__(self, name: str, bottom: str, emb: str, n_vectors: int, dim: int) -> None:
        n_pairs = n_vectors * (n_vectors - 1) // 2
        super().__init__(name, kind="dense", reads=(bottom, emb),
                         writes={name: (dim + n_pairs,)})
        self.n_vectors, self.dim = n_vectors, dim
        rows, cols = torch.triu_indices(n_vectors, n_vectors, offset=1)
        self.register_buffer("pairs", rows * n_vectors + cols, persistent=False)

    @property
    def out_width(self) -> int:
        return self.dim + self.n_vectors * (self.n_vectors - 1) // 2

    def forward(self, bottom: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        vectors = torch.cat([bottom.unsqueeze(1), emb.reshape(-1, self.n_vectors - 1, self.dim)],
                            dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2)).flatten(1)[:, self.pairs]
        return torch.cat([bottom, dots], dim=1)


class CosineScore(ChainLayer):
    """Matching score: a learned scale and bias on the cosine of two equal-width towers."""

    def __init__(self, name: str, user: str, item: str) -> None:
        super().__init__(name, kind="dense", reads=(user, item), writes={"logit": ()})
        self.scale = nn.Parameter(torch.tensor(5.0))
        self.bias = nn.Parameter(torch.tensor(0.0))

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.scale * nn.functional.cosine_similarity(u, v, dim=1) + self.bias


class NCEScore(ChainLayer):
    """Skip-gram scores: the projected centre vector `centre` [dim] against 1 + K output
    vectors `targets`, each stored as `dim` weights plus a bias; writes [1 + K] logits."""

    def __init__(self, name: str, centre: str, targets: str, dim: int, n_targets: int) -> None:
        super().__init__(name, kind="dense", reads=(centre, targets),
                         writes={"logit": (n_targets,)})
        self.dim, self.n_targets = dim, n_targets

    def forward(self, centre: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        targets = targets.reshape(-1, self.n_targets, self.dim + 1)
        scores = torch.bmm(targets[:, :, : self.dim], centre.unsqueeze(2)).squeeze(2)
        return scores + targets[:, :, self.dim]
