"""Seeded synthetic data with the skew of real CTR logs: power-law ids and imbalanced labels.

Labels come from a hidden "teacher" (a hash-derived weight per id plus a linear term on the
dense features), so a model can actually learn them and its loss falls during training.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from heterps_core.zoo.base import Batch, ModelConfig, ZooModel

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


# --- an indexable stream: any process can make any mini-batch alone ----------------------

_MASK64 = (1 << 64) - 1
HELD_OUT_INDEX = 1 << 62  # never a training mini-batch's index


def batch_seed(seed: int, index: int) -> int:
    """The seed of mini-batch `index` of the stream seeded `seed` (splitmix64 of both)."""
    z = (seed * 0x9E3779B97F4A7C15 + index + 1) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & ((1 << 63) - 1)


def indexed_batches(
    zoo_model: ZooModel, config: ModelConfig, batch_size: int, seed: int = 0,
    start: int = 0, step: int = 1,
) -> Iterator[Batch]:
    """Mini-batches start, start + step, ... of the model's seeded stream, making only those.

    Mini-batch m is the first batch of the model's own generator seeded `batch_seed(seed, m)`,
    so replica r of k (start=r, step=k) makes its own mini-batches and no other, and the
    union over replicas is exactly the one-replica stream (start=0, step=1).
    """
    for m in itertools.count(start, step):
        yield next(iter(zoo_model.batches(config, batch_size, seed=batch_seed(seed, m))))


def held_out_batch(
    zoo_model: ZooModel, config: ModelConfig, samples: int, seed: int = 0
) -> Batch:
    """A fixed evaluation batch of the same distribution that no training mini-batch repeats."""
    return next(iter(zoo_model.batches(config, samples, seed=batch_seed(seed, HELD_OUT_INDEX))))
