"""DeepFM (Guo et al. 2017): a factorisation machine and an MLP sharing the field embeddings."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import N_DENSE, N_SPARSE, PRODUCTION_VOCAB, CTRModel
from heterps_core.zoo.data import ctr_batch, generator
from heterps_core.zoo.heads import FMInteraction
from heterps_core.zoo.layers import Logit, SparseInput, mlp_chain
from heterps_core.zoo.sizes import check_size


@register
class DeepFM(ZooModel):
    name = "deepfm"
    description = "DeepFM: FM (first + second order) and MLP 400-400-400 over shared embeddings"
    default_batch_size = 1000
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        vocab = {"tiny": 100, "small": 10_000, "production": PRODUCTION_VOCAB // 2}[size]
        hidden = (64, 32) if size == "tiny" else (400, 400, 400)
        return ModelConfig(vocab_sizes=(vocab,) * N_SPARSE, embedding_dim=10, hidden=hidden,
                           extra={"n_dense": N_DENSE})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        dim = config.embedding_dim
        first = SparseInput(config.vocab_sizes, dim, N_DENSE, wide=True)
        fm = FMInteraction("fm", "emb", "wide", N_DENSE, len(config.vocab_sizes), dim)
        hidden, last, width = mlp_chain("fc", "emb", first.out_width, config.hidden)
        layers: list[ChainLayer] = [first, fm, *hidden, Logit("out", last, width, add=("fm",))]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        while True:
            yield ctr_batch(gen, batch_size, config.vocab_sizes, N_DENSE)
