"""A two-tower matching model (MATCHNET-style): user and item fields embedded, one MLP tower
each, a cosine score between the tower outputs."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import CTRModel
from heterps_core.zoo.data import generator, matching_batch
from heterps_core.zoo.heads import CosineScore
from heterps_core.zoo.layers import SparseInput, mlp_chain
from heterps_core.zoo.sizes import check_size

USER_FIELDS = 4
ITEM_FIELDS = 4


@register
class TwoTower(ZooModel):
    name = "two_tower"
    description = "Two-tower matching (MATCHNET-style): 4 user + 4 item fields, towers 256-128"
    default_batch_size = 1024

    def config(self, size: str = "small") -> ModelConfig:
        check_size(size, self.name)
        # Production: 100M users and 20M items per field, dim 32 -> ~61 GB of tables.
        vocab = {
            "tiny": (100,) * (USER_FIELDS + ITEM_FIELDS),
            "small": (10_000,) * (USER_FIELDS + ITEM_FIELDS),
            "production": (100_000_000,) * USER_FIELDS + (20_000_000,) * ITEM_FIELDS,
        }[size]
        hidden = (32, 16) if size == "tiny" else (256, 128)
        return ModelConfig(vocab_sizes=vocab, embedding_dim=32, hidden=hidden,
                           extra={"user_fields": USER_FIELDS})

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        torch.manual_seed(seed)
        dim = config.embedding_dim
        n_user = int(config.extra["user_fields"])
        n_item = len(config.vocab_sizes) - n_user
        first = SparseInput(config.vocab_sizes, dim, n_dense=0)
        user, width = mlp_chain("user_fc", n_user * dim, config.hidden, start=0)
        # After the user tower, the item embeddings start right behind its output.
        item, _ = mlp_chain("item_fc", n_item * dim, config.hidden, start=width)
        layers: list[ChainLayer] = [first, *user, *item, CosineScore("score", width)]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        n_user = int(config.extra["user_fields"])
        user_vocab, item_vocab = config.vocab_sizes[:n_user], config.vocab_sizes[n_user:]
        while True:
            users, items, labels = matching_batch(gen, batch_size, user_vocab, item_vocab)
            yield {"sparse": torch.cat([users, items], dim=1)}, labels
