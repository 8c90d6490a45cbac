"""A two-tower matching model (MATCHNET-style): user and item fields embedded, one MLP tower
each, a cosine score between the tower outputs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from heterps_core.zoo import register
from heterps_core.zoo.base import Batch, ChainLayer, ChainModel, ModelConfig, ZooModel
from heterps_core.zoo.ctr_dnn import CTRModel
from heterps_core.zoo.data import generator, matching_batch
from heterps_core.zoo.heads import CosineScore
from heterps_core.zoo.layers import FieldEmbedding, mlp_chain
from heterps_core.zoo.sizes import check_size

USER_FIELDS = 4
ITEM_FIELDS = 4


class TowerInput(ChainLayer):
    """Every field's embedding in one lookup; writes the user fields' and the item fields'
    vectors as `user` and `item` (views of it: each tower reads its own)."""

    def __init__(self, vocab_sizes: Sequence[int], dim: int, n_user: int) -> None:
        n_item = len(vocab_sizes) - n_user
        super().__init__("embedding", kind="embedding", shardable=True, reads=("sparse",),
                         writes={"user": (n_user * dim,), "item": (n_item * dim,)})
        self.embedding = FieldEmbedding(vocab_sizes, dim)
        self.n_user = n_user

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        vectors = self.embedding(ids)
        return vectors[:, : self.n_user].flatten(1), vectors[:, self.n_user :].flatten(1)


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
        first = TowerInput(config.vocab_sizes, dim, n_user)
        user, user_out, _ = mlp_chain("user_fc", "user", n_user * dim, config.hidden)
        item, item_out, _ = mlp_chain("item_fc", "item", n_item * dim, config.hidden)
        layers: list[ChainLayer] = [first, *user, *item,
                                    CosineScore("score", user_out, item_out)]
        return CTRModel(layers)

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        gen = generator(seed)
        n_user = int(config.extra["user_fields"])
        user_vocab, item_vocab = config.vocab_sizes[:n_user], config.vocab_sizes[n_user:]
        while True:
            users, items, labels = matching_batch(gen, batch_size, user_vocab, item_vocab)
            yield {"sparse": torch.cat([users, items], dim=1)}, labels
