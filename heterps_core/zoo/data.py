"""Seeded synthetic data with the skew of real CTR logs: power-law ids and imbalanced labels.

Labels come from a hidden "teacher" (a hash-derived weight per id plus a linear term on the
dense features), so a model can actually learn them and its loss falls during training.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

_HASH_MULT = 2654435761  # Knuth's multiplicative hash constant
_SCATTER_MULT = 40503


def generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def power_law_ids(
    gen: torch.Generator, shape: tuple[int, ...], vocab: int, alpha: float = 1.05
) -> torch.Tensor:
    """Ids in [0, vocab) with P(rank r) ~ r^-alpha, hot ids scattered over the table.

    Inverse-CDF sampling of a continuous power law on [1, vocab + 1]; the multiplicative
    scatter keeps hot rows from all sitting at the start of the table, as hashing does.
    """
    u = torch.rand(shape, generator=gen, dtype=torch.float64)
    if abs(alpha - 1.0) < 1e-9:
        ranks = torch.exp(u * math.log(vocab + 1.0))
    else:
        top = (vocab + 1.0) ** (1.0 - alpha)
        ranks = (u * (top - 1.0) + 1.0) ** (1.0 / (1.0 - alpha))
    ids = (ranks.floor().long() - 1).clamp_(0, vocab - 1)
    if math.gcd(_SCATTER_MULT, vocab) == 1:
        ids = (ids * _SCATTER_MULT) % vocab
    return ids


def teacher_weight(ids: torch.Tensor, salt: int = 0) -> torch.Tensor:
    """A fixed pseudo-random weight in [-1, 1) per (id, salt), without storing a table."""
    h = (ids * _HASH_MULT + salt * 97 + 12345) % 65536
    return h.to(torch.float32) / 32768.0 - 1.0


def field_logits(ids: torch.Tensor) -> torch.Tensor:
    """Teacher logit contribution of [batch, fields] ids: per-field hashed weights, summed."""
    salts = torch.arange(ids.shape[1], dtype=torch.long)
    return teacher_weight(ids * 1009 + salts).sum(dim=1) / math.sqrt(ids.shape[1])


def labels_from_logits(
    gen: torch.Generator, logits: torch.Tensor, positive_rate: float
) -> torch.Tensor:
    """Bernoulli labels whose mean is about `positive_rate` (class imbalance)."""
    bias = math.log(positive_rate / (1.0 - positive_rate))
    probs = torch.sigmoid(2.0 * logits + bias)
    return torch.bernoulli(probs, generator=gen)


def dense_features(gen: torch.Generator, batch: int, n_dense: int) -> torch.Tensor:
    """Heavy-tailed non-negative counts after the usual log(1 + x) (like Criteo I1-I13)."""
    counts = torch.empty(batch, n_dense).exponential_(0.2, generator=gen).floor_()
    return torch.log1p(counts)


def ctr_batch(
    gen: torch.Generator, batch: int, vocab_sizes: Sequence[int], n_dense: int,
    positive_rate: float = 0.25,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One CTR-style batch: {"dense": [B, n_dense], "sparse": [B, fields]} and labels [B]."""
    sparse = torch.stack(
        [power_law_ids(gen, (batch,), int(v)) for v in vocab_sizes], dim=1
    )
    inputs = {"sparse": sparse}
    logits = field_logits(sparse)
    if n_dense:
        dense = dense_features(gen, batch, n_dense)
        direction = teacher_weight(torch.arange(n_dense), 7)
        logits = logits + (dense - dense.mean()) @ direction / math.sqrt(n_dense)
        inputs = {"dense": dense, "sparse": sparse}
    return inputs, labels_from_logits(gen, logits, positive_rate)


def latent(ids: torch.Tensor, rank: int, salt: int) -> torch.Tensor:
    """Teacher latent vectors [batch, rank] summed over the fields of [batch, fields] ids."""
    salts = torch.arange(ids.shape[1], dtype=torch.long) * 1009 + salt * 7919
    parts = [teacher_weight(ids * 31 + salts, k).sum(dim=1) for k in range(rank)]
    return torch.stack(parts, dim=1) / math.sqrt(ids.shape[1])


def matching_batch(
    gen: torch.Generator, batch: int, user_vocab: Sequence[int], item_vocab: Sequence[int],
    positive_rate: float = 0.2,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(user ids, item ids, labels): clicks follow a low-rank user x item teacher affinity."""
    users = torch.stack([power_law_ids(gen, (batch,), int(v)) for v in user_vocab], dim=1)
    items = torch.stack([power_law_ids(gen, (batch,), int(v)) for v in item_vocab], dim=1)
    affinity = (latent(users, 4, 1) * latent(items, 4, 2)).sum(dim=1)
    return users, items, labels_from_logits(gen, affinity, positive_rate)
