"""DLRM-style (Naumov et al. 2019): bottom MLP on dense features, embedding tables, pairwise
dot interaction, top MLP."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import N_DENSE, N_SPARSE, CTRModel
from heterps_core.zoo.data import ctr_batch, generator
from heterps_core.zoo.heads import DotInteraction
from heterps_core.zoo.layers import AddCarried, SparseInput, mlp_chain
from heterps_core.zoo.sizes import check_size

# Production: 26 tables of 10M rows at dim 64 -> 67 GB of float32 (MLPerf DLRM is ~100 GB).
PRODUCTION_VOCAB = 10_000_000


@register
class DLRM(ZooModel):
    name = "dlrm"
    description = "DLRM: bottom MLP 512-256-dim, 26 tables, dot interaction, top MLP 1024-1024-512"
    default_batch_size = 2048
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size)
        if size == "tiny":
            return ModelConfig(vocab_sizes=(100,) * N_SPARSE, embedding_dim=8, hidden=(32,),
                               extra={"bottom": (16,)})
        vocab = {"small": 10_000, "production": PRODUCTION_VOCAB}[size]
        return ModelConfig(vocab_sizes=(vocab,) * N_SPARSE, embedding_dim=64,
                           hidden=(1024, 1024, 512), extra={"bottom": (512, 256)})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        dim = config.embedding_dim
        first = SparseInput(config.vocab_sizes, dim, N_DENSE)
        # The bottom MLP ends at the embedding width so its output can be dotted with tables.
        bottom, _ = mlp_chain("bottom", N_DENSE, (*config.extra["bottom"], dim), start=0)
        interact = DotInteraction("interact", 1 + len(config.vocab_sizes), dim)
        top, width = mlp_chain("top", interact.out_width, config.hidden)
        layers: list[ChainLayer] = [first, *bottom, interact, *top, AddCarried("out", width)]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        while True:
            yield ctr_batch(gen, batch_size, config.vocab_sizes, N_DENSE)
