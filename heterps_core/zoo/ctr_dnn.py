"""CTR-DNN: the HeterPS / PaddleRec CTR example (Criteo layout: 13 dense + 26 sparse features,
embedding size 10, MLP 400-400-400, sigmoid + binary cross-entropy)."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.data import ctr_batch, generator
from heterps_core.zoo.layers import Logit, SparseInput, bce_loss, mlp_chain
from heterps_core.zoo.sizes import check_size

N_DENSE = 13
N_SPARSE = 26
# Production: 26 hashed fields with ~1.5e9 rows in all -> 60 GB of float32 at dim 10, the
# "tens of GB" regime a parameter server exists for.
PRODUCTION_VOCAB = 60_000_000
# `paddle`: Paddle's distributed CTR example (dist_ctr / PaddleRec ctr-dnn) hashes all 26
# slots into one table of 1,000,001 rows; here 26 tables of equal share (same rows, same
# bytes), embedding 10, fc 400-400-400, batch 1000.
PADDLE_VOCAB = 1_000_001 // N_SPARSE + 1


class CTRModel(ChainModel):
    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return bce_loss(output, labels)


@register
class CtrDnn(ZooModel):
    name = "ctr_dnn"
    description = "CTR-DNN on Criteo: 13 dense + 26 sparse features, emb 10, MLP 400-400-400"
    default_batch_size = 1000
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        vocab = {"tiny": 100, "small": 10_000, "production": PRODUCTION_VOCAB,
                 "paddle": PADDLE_VOCAB}[size]
        hidden = (64, 32) if size == "tiny" else (400, 400, 400)
        return ModelConfig(vocab_sizes=(vocab,) * N_SPARSE, embedding_dim=10, hidden=hidden,
                           extra={"n_dense": N_DENSE})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        n_dense = int(config.extra.get("n_dense", N_DENSE))
        first = SparseInput(config.vocab_sizes, config.embedding_dim, n_dense)
        hidden, last, width = mlp_chain("fc", "emb", first.out_width, config.hidden)
        layers: list[ChainLayer] = [first, *hidden, Logit("out", last, width)]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        n_dense = int(config.extra.get("n_dense", N_DENSE))
        while True:
            yield ctr_batch(gen, batch_size, config.vocab_sizes, n_dense)
