"""Skip-gram word2vec trained with noise-contrastive estimation (negative sampling form).

Layer 0 looks up the centre word's input vector and the output vectors (+ bias) of the true
context word and K noise words; both tables are sparse and live on the parameter server. A
dense projection then scores them; the loss is BCE against [1, 0, ..., 0].
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.data import generator, power_law_ids
from heterps_core.zoo.heads import NCEScore
from heterps_core.zoo.layers import Dense, bce_loss
from heterps_core.zoo.sizes import check_size
from heterps_core.zoo.tables import sparse_table


class NCELookup(ChainLayer):
    """Reads the word ids `centre` and `targets`; writes their vectors `centre_vec` [dim] and
    `target_vecs` [(1 + K) x (output vector (dim) + bias)]."""

    def __init__(self, vocab: int, dim: int, n_targets: int) -> None:
        super().__init__("embedding", kind="embedding", shardable=True,
                         reads=("centre", "targets"),
                         writes={"centre_vec": (dim,), "target_vecs": (n_targets * (dim + 1),)})
        self.inputs = sparse_table(vocab, dim, "uniform", 0.5 / dim)
        self.outputs = sparse_table(vocab, dim + 1, "zeros")

    def forward(self, centre: torch.Tensor, targets: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inputs(centre), self.outputs(targets).flatten(1)


class SkipGramModel(ChainModel):
    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return bce_loss(output, labels)


@register
class SkipGramNCE(ZooModel):
    name = "skipgram_nce"
    description = "Skip-gram with NCE: 2 sparse tables (dim 128), 10 noise words per sample"
    default_batch_size = 1024

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        # Production: a 100M-word vocabulary at dim 128, two tables -> ~103 GB.
        vocab = {"tiny": 500, "small": 50_000, "production": 100_000_000}[size]
        dim = 16 if size == "tiny" else 128
        return ModelConfig(vocab_sizes=(vocab,), embedding_dim=dim, hidden=(dim,),
                           extra={"negatives": 10, "window": 2})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        dim = config.embedding_dim
        n_targets = 1 + int(config.extra["negatives"])
        layers: list[ChainLayer] = [
            NCELookup(config.vocab_sizes[0], dim, n_targets),
            Dense("project", "centre_vec", "project", dim, config.hidden[0], activation="tanh"),
            NCEScore("nce_score", "project", "target_vecs", config.hidden[0], n_targets),
        ]
        if config.hidden[0] != dim:
            raise ValueError("skipgram_nce: hidden[0] must equal embedding_dim")
        return SkipGramModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        vocab = config.vocab_sizes[0]
        negatives = int(config.extra["negatives"])
        window = int(config.extra["window"])
        labels = torch.zeros(batch_size, 1 + negatives)
        labels[:, 0] = 1.0
        while True:
            centre = power_law_ids(gen, (batch_size,), vocab)
            # Context words are near the centre in a fixed hidden "sentence order", so the
            # (centre, context) relation is learnable; noise follows the flatter unigram^0.75.
            offset = torch.randint(-window, window + 1, (batch_size,), generator=gen)
            context = (centre * 7 + offset) % vocab
            noise = power_law_ids(gen, (batch_size, negatives), vocab, alpha=0.75)
            targets = torch.cat([context.unsqueeze(1), noise], dim=1)
            yield {"centre": centre, "targets": targets}, labels.clone()
