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
from heterps_core.zoo.layers import Logit, SparseInput, mlp_chain
from heterps_core.zoo.sizes import check_size

# Production: 26 tables of 10M rows at dim 64 -> 67 GB of float32 (MLPerf DLRM is ~100 GB).
PRODUCTION_VOCAB = 10_000_000
# `criteo-1tb`: the MLPerf Training DLRM (reference implementation, Criteo Terabyte with
# --max-ind-range=40000000), as NVIDIA DeepLearningExamples and MLPerf train it: 26 tables
# of these rows (about 204M in all, 97 GiB of float32 at dim 128), bottom 512-256-128, dot
# interaction, top 1024-1024-512-256-1.
CRITEO_1TB_VOCAB = (
    39_884_406, 39_043, 17_289, 7_420, 20_263, 3, 7_120, 1_543, 63, 38_532_951, 2_953_546,
    403_346, 10, 2_208, 11_938, 155, 4, 976, 14, 39_979_771, 25_641_295, 39_664_984, 585_935,
    12_972, 108, 36,
)


@register
class DLRM(ZooModel):
    name = "dlrm"
    description = "DLRM: bottom MLP 512-256-dim, 26 tables, dot interaction, top MLP 1024-1024-512"
    default_batch_size = 2048
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        if size == "criteo-1tb":
            return ModelConfig(vocab_sizes=CRITEO_1TB_VOCAB, embedding_dim=128,
                               hidden=(1024, 1024, 512, 256), extra={"bottom": (512, 256)})
        if size == "tiny":
            return ModelConfig(vocab_sizes=(100,) * N_SPARSE, embedding_dim=8, hidden=(32,),
                               extra={"bottom": (16,)})
        vocab = {"small": 10_000, "production": PRODUCTION_VOCAB}[size]
        return ModelConfig(vocab_sizes=(vocab,) * N_SPARSE, embedding_dim=64,
                           hidden=(1024, 1024, 512), extra={"bottom": (512, 256)})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        dim = config.embedding_dim
        first = SparseInput(config.vocab_sizes, dim, N_DENSE, concat_dense=False)
        # The bottom MLP reads the dense features themselves and ends at the embedding width,
        # so its output can be dotted with the tables' vectors.
        bottom, bottom_out, _ = mlp_chain("bottom", "dense", N_DENSE,
                                          (*config.extra["bottom"], dim))
        interact = DotInteraction("interact", bottom_out, "emb", 1 + len(config.vocab_sizes), dim)
        top, last, width = mlp_chain("top", "interact", interact.out_width, config.hidden)
        layers: list[ChainLayer] = [first, *bottom, interact, *top, Logit("out", last, width)]
        return CTRModel(layers, inputs={"dense": (N_DENSE,)})

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        while True:
            yield ctr_batch(gen, batch_size, config.vocab_sizes, N_DENSE)
