"""2EMB-style: two large embedding tables (query terms and ad ids, each bag pooled) feeding
one MLP, as in the HeterPS paper's two-table workload."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, Inputs, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import CTRModel
from heterps_core.zoo.data import generator, matching_batch
from heterps_core.zoo.layers import Logit, mlp_chain
from heterps_core.zoo.sizes import check_size
from heterps_core.zoo.tables import sparse_table

QUERY_TERMS = 8
AD_TERMS = 4


class TwoTables(nn.Module):
    """Query bag and ad bag, each summed from its own sparse table: output [query | ad]."""

    def __init__(self, query_vocab: int, ad_vocab: int, dim: int) -> None:
        super().__init__()
        self.query = sparse_table(query_vocab, dim, "normal", 0.01, bag_mode="mean")
        self.ad = sparse_table(ad_vocab, dim, "normal", 0.01, bag_mode="mean")

    def forward(self, inputs: Inputs) -> torch.Tensor:
        return torch.cat([self.query(inputs["query"]), self.ad(inputs["ad"])], dim=1)


class TwoTableInput(ChainLayer):
    def __init__(self, query_vocab: int, ad_vocab: int, dim: int) -> None:
        super().__init__("embedding", kind="embedding", shardable=True,
                         reads=("query", "ad"), writes={"emb": (2 * dim,)})
        self.tables = TwoTables(query_vocab, ad_vocab, dim)

    def forward(self, query: torch.Tensor, ad: torch.Tensor) -> torch.Tensor:
        return self.tables({"query": query, "ad": ad})


@register
class TwoEmb(ZooModel):
    name = "two_emb"
    description = "2EMB: two large tables (query terms, ad ids; dim 64) + MLP 512-256-128"
    default_batch_size = 1000
    default_optimizer = "adam"

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        # Production: 150M query terms and 50M ads at dim 64 -> 51 GB of tables.
        vocab = {"tiny": (200, 100), "small": (50_000, 10_000),
                 "production": (150_000_000, 50_000_000)}[size]
        hidden = (32, 16) if size == "tiny" else (512, 256, 128)
        return ModelConfig(vocab_sizes=vocab, embedding_dim=64, hidden=hidden)

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        query_vocab, ad_vocab = config.vocab_sizes
        first = TwoTableInput(query_vocab, ad_vocab, config.embedding_dim)
        hidden, last, width = mlp_chain("fc", "emb", 2 * config.embedding_dim, config.hidden)
        layers: list[ChainLayer] = [first, *hidden, Logit("out", last, width)]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        query_vocab, ad_vocab = config.vocab_sizes
        while True:
            query, ad, labels = matching_batch(
                gen, batch_size, (query_vocab,) * QUERY_TERMS, (ad_vocab,) * AD_TERMS
            )
            yield {"query": query, "ad": ad}, labels
