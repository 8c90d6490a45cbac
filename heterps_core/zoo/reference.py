"""Hand-written modules of the zoo's architectures: plain PyTorch as a user would write each
model, with no chain contract (one gather over concatenated tables, `nn.EmbeddingBag` for
bags, `nn.Sequential` Linear chains).

They exist to hold the zoo to account (issue 21): `bench/zoo_speed.py` trains each zoo model
and its reference side by side, and the tests load a zoo model's weights into its reference
and check that both compute the same outputs and gradients, so "the same architecture and
FLOPs" is checked, not claimed. Parameters are created in the zoo model's order, so weights
transfer by position (`load_zoo_weights`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch
from torch import nn

from heterps_core.zoo.base import ChainModel, Inputs, ModelConfig


def mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear + activation for every consecutive pair of `sizes`."""
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), activation()]
    return nn.Sequential(*layers)


class Tables(nn.Module):
    """Every field's table as one sparse `nn.Embedding` with row offsets: one gather."""

    offsets: torch.Tensor

    def __init__(self, vocab_sizes: Sequence[int], dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(int(sum(vocab_sizes)), dim, sparse=True)
        starts = torch.tensor([0, *itertools.accumulate(vocab_sizes)][:-1])
        self.register_buffer("offsets", starts, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids + self.offsets)


class CtrDnnReference(nn.Module):
    """CTR-DNN: [dense | embeddings] -> ReLU MLP -> logit."""

    def __init__(self, config: ModelConfig, n_dense: int = 13) -> None:
        super().__init__()
        self.tables = Tables(config.vocab_sizes, config.embedding_dim)
        width = n_dense + len(config.vocab_sizes) * config.embedding_dim
        self.mlp = mlp([width, *config.hidden])
        self.out = nn.Linear(config.hidden[-1], 1)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        x = torch.cat([inputs["dense"], self.tables(inputs["sparse"]).flatten(1)], dim=1)
        return self.out(self.mlp(x)).squeeze(1)


class WideDeepReference(nn.Module):
    """Wide & Deep: the deep MLP's logit plus the sum of per-id first-order weights."""

    def __init__(self, config: ModelConfig, n_dense: int = 13) -> None:
        super().__init__()
        self.tables = Tables(config.vocab_sizes, config.embedding_dim)
        self.wide = Tables(config.vocab_sizes, 1)
        width = n_dense + len(config.vocab_sizes) * config.embedding_dim
        self.mlp = mlp([width, *config.hidden])
        self.out = nn.Linear(config.hidden[-1], 1)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        ids = inputs["sparse"]
        x = torch.cat([inputs["dense"], self.tables(ids).flatten(1)], dim=1)
        return (self.out(self.mlp(x)) + self.wide(ids).sum(dim=1)).squeeze(1)


class DeepFMReference(WideDeepReference):
    """DeepFM: first-order sum + FM second-order term + the MLP's logit (Wide & Deep's
    parameters, with the FM term over the shared embeddings)."""

    def forward(self, inputs: Inputs) -> torch.Tensor:
        ids = inputs["sparse"]
        emb = self.tables(ids)
        fm = 0.5 * (emb.sum(dim=1).pow(2) - emb.pow(2).sum(dim=1)).sum(dim=1, keepdim=True)
        deep = self.out(self.mlp(torch.cat([inputs["dense"], emb.flatten(1)], dim=1)))
        return (deep + self.wide(ids).sum(dim=1) + fm).squeeze(1)


class DLRMReference(nn.Module):
    """DLRM as its authors write it: bottom MLP, embeddings, pairwise dots, top MLP."""

    pairs: torch.Tensor

    def __init__(self, config: ModelConfig, n_dense: int = 13) -> None:
        super().__init__()
        dim = config.embedding_dim
        self.tables = Tables(config.vocab_sizes, dim)
        self.bottom = mlp([n_dense, *config.extra["bottom"], dim])
        n = 1 + len(config.vocab_sizes)
        rows, cols = torch.triu_indices(n, n, offset=1)
        self.register_buffer("pairs", rows * n + cols, persistent=False)
        self.top = mlp([dim + n * (n - 1) // 2, *config.hidden])
        self.out = nn.Linear(config.hidden[-1], 1)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        x = self.bottom(inputs["dense"])
        vectors = torch.cat([x.unsqueeze(1), self.tables(inputs["sparse"])], dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2)).flatten(1)[:, self.pairs]
        return self.out(self.top(torch.cat([x, dots], dim=1))).squeeze(1)


class TwoTowerReference(nn.Module):
    """Two towers over the user and the item fields, scored by a scaled cosine."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        dim, n_user = config.embedding_dim, int(config.extra["user_fields"])
        self.n_user = n_user
        self.tables = Tables(config.vocab_sizes, dim)
        self.user = mlp([n_user * dim, *config.hidden])
        self.item = mlp([(len(config.vocab_sizes) - n_user) * dim, *config.hidden])
        self.score = ScaledCosine()

    def forward(self, inputs: Inputs) -> torch.Tensor:
        vectors = self.tables(inputs["sparse"])
        u = self.user(vectors[:, : self.n_user].flatten(1))
        v = self.item(vectors[:, self.n_user :].flatten(1))
        return self.score(u, v)


class ScaledCosine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(5.0))
        self.bias = nn.Parameter(torch.tensor(0.0))

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.scale * nn.functional.cosine_similarity(u, v, dim=1) + self.bias


class TwoEmbReference(nn.Module):
    """2EMB: mean bags of query terms and of ad ids, each from its table, into one MLP."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        query_vocab, ad_vocab = config.vocab_sizes
        dim = config.embedding_dim
        self.query = nn.EmbeddingBag(query_vocab, dim, mode="mean", sparse=True)
        self.ad = nn.EmbeddingBag(ad_vocab, dim, mode="mean", sparse=True)
        self.mlp = mlp([2 * dim, *config.hidden])
        self.out = nn.Linear(config.hidden[-1], 1)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        x = torch.cat([self.query(inputs["query"]), self.ad(inputs["ad"])], dim=1)
        return self.out(self.mlp(x)).squeeze(1)


class SkipGramReference(nn.Module):
    """Skip-gram with NCE: a tanh projection of the centre word scored against 1 + K output
    vectors (weights and a bias per word)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        dim = config.embedding_dim
        self.dim = dim
        self.inputs = nn.Embedding(config.vocab_sizes[0], dim, sparse=True)
        self.outputs = nn.Embedding(config.vocab_sizes[0], dim + 1, sparse=True)
        self.project = nn.Sequential(nn.Linear(dim, config.hidden[0]), nn.Tanh())

    def forward(self, inputs: Inputs) -> torch.Tensor:
        centre = self.project(self.inputs(inputs["centre"]))
        targets = self.outputs(inputs["targets"])
        scores = torch.bmm(targets[:, :, : self.dim], centre.unsqueeze(2)).squeeze(2)
        return scores + targets[:, :, self.dim]


REFERENCES: dict[str, Callable[[ModelConfig], nn.Module]] = {
    "ctr_dnn": CtrDnnReference,
    "wide_deep": WideDeepReference,
    "deepfm": DeepFMReference,
    "dlrm": DLRMReference,
    "two_tower": TwoTowerReference,
    "two_emb": TwoEmbReference,
    "skipgram_nce": SkipGramReference,
}


def load_zoo_weights(reference: nn.Module, model: ChainModel) -> None:
    """Copy `model`'s parameters into `reference` by position (both create them in the
    same order with the same shapes)."""
    ours, theirs = list(reference.parameters()), list(model.parameters())
    if [p.shape for p in ours] != [p.shape for p in theirs]:
        raise ValueError("the reference's parameters do not match the zoo model's")
    with torch.no_grad():
        for mine, zoo_param in zip(ours, theirs, strict=True):
            mine.copy_(zoo_param)
