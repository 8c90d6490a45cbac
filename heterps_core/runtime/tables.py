"""The sparse embedding tables a job's parameter server holds, and the messages about them.

Shared by the server shards (`ps.py`) and the stages' client (`ps_client.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from heterps_core.runtime.spec import JobSpec
from heterps_core.zoo.base import ChainModel

OP_PULL, OP_PUSH, OP_CHECKPOINT, OP_DONE = 1, 2, 3, 4
HEADER = 4  # op, tables, round (or step), rows

# A pull or push carries every table of a mini-batch at once (one request per shard, not
# one per table: each message costs an isend and a receive on both ends). Its int64
# payload is `tables | counts | ids`: the tables' numbers, each one's row count, then
# their ids one table after the other; a push's float32 payload is their gradient rows,
# flattened in the same order, and a pull's reply the rows.


def request(tables: list[int], parts: list[torch.Tensor]) -> torch.Tensor:
    """The int64 payload of a pull or push: `tables | counts | ids`."""
    counts = torch.tensor([p.numel() for p in parts], dtype=torch.int64)
    return torch.cat([torch.tensor(tables, dtype=torch.int64), counts, *parts])


def parse_request(payload: torch.Tensor, n_tables: int) -> list[tuple[int, torch.Tensor]]:
    """(table, ids) of every table in a payload made by `request`."""
    tables = payload[:n_tables].tolist()
    counts = payload[n_tables : 2 * n_tables].tolist()
    ids = payload[2 * n_tables :].split(counts)
    return list(zip(tables, ids, strict=True))


@dataclass(frozen=True)
class TableRef:
    """Table `table` of the model: module `path` inside layer `layer`."""

    table: int
    layer: int
    path: str
    module: nn.Module

    @property
    def weight(self) -> torch.Tensor:
        weight = self.module.weight
        assert isinstance(weight, torch.Tensor)
        return weight


def sparse_tables(model: ChainModel) -> list[TableRef]:
    """Every sparse embedding table of the model's embedding layers, in a fixed order."""
    refs: list[TableRef] = []
    for li, layer in enumerate(model.layers):
        if not getattr(layer, "is_sparse", False):
            continue
        for path, module in layer.named_modules():
            if isinstance(module, nn.Embedding | nn.EmbeddingBag) and module.sparse:
                refs.append(TableRef(len(refs), li, path, module))
    return refs


def owning_stage(spec: JobSpec, ref: TableRef) -> int:
    return next(s for s, st in enumerate(spec.stages) if st.first <= ref.layer <= st.last)


def client_ranks(spec: JobSpec, refs: list[TableRef]) -> list[int]:
    stages = sorted({owning_stage(spec, ref) for ref in refs})
    return [rank for s in stages for rank in spec.stage_ranks(s)]


def header(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)
