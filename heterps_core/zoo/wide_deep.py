"""Wide & Deep (Cheng et al. 2016) on the Criteo layout: a first-order (wide) term per sparse
id beside an MLP over dense features and field embeddings."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import N_DENSE, N_SPARSE, PRODUCTION_VOCAB, CTRModel
from heterps_core.zoo.data import ctr_batch, generator
from heterps_core.zoo.layers import Logit, SparseInput, mlp_chain
from heterps_core.zoo.sizes import check_size


@register
class WideDeep(ZooModel):
    name = "wide_deep"
    description = "Wide & Deep: wide first-order sparse term + MLP 1024-512-256 (Criteo layout)"
    default_batch_size = 1000
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        vocab = {"tiny": 100, "small": 10_000, "production": PRODUCTION_VOCAB // 2}[size]
        hidden = (64, 32) if size == "tiny" else (1024, 512, 256)
        return ModelConfig(vocab_sizes=(vocab,) * N_SPARSE, embedding_dim=16, hidden=hidden,
                           extra={"n_dense": N_DENSE})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        first = SparseInput(config.vocab_sizes, config.embedding_dim, N_DENSE, wide=True)
        # The deep part reads [dense | embeddings]; the wide sum joins at the logit.
        hidden, last, width = mlp_chain("deep", "emb", first.out_width, config.hidden)
        layers: list[ChainLayer] = [first, *hidden, Logit("out", last, width, add=("wide",))]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        while True:
            yield ctr_batch(gen, batch_size, config.vocab_sizes, N_DENSE)
