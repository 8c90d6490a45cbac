"""The parameter server's side of `local.runtime_steps`: a real shard in this process, its
time per row kept apart from the stage's (the local types' `row_s`).
"""

from __future__ import annotations

import time
from typing import Any

import torch


class ServerProbe:
    """A parameter-server shard in this process and the remote tables that read from it:
    what a stage and its server do per mini-batch, without the transport."""

    def __init__(self, model: Any, optimizer: Any) -> None:
        from heterps_core.ps.remote import replace_table
        from heterps_core.ps.shard import Shard, TableSpec
        from heterps_core.runtime.ps import first_rows
        from heterps_core.runtime.tables import sparse_tables

        refs = sparse_tables(model)
        self.shard = Shard([TableSpec(int(ref.weight.shape[1]), first_rows(ref), optimizer)
                            for ref in refs], synchronous=True)
        self.by_layer: dict[int, list[Any]] = {}
        for ref in refs:
            remote = replace_table(model.layers[ref.layer], ref.path, ref.table, self._fetch)
            self.by_layer.setdefault(ref.layer, []).append(remote)
        self._seconds = 0.0

    def _fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(f"table {table}: a lookup outside the rows pulled for the batch")

    def pull(self, layer_index: int, layer: Any, x: object) -> list[Any] | None:
        from heterps_core.ps.remote import BatchRows, collect_rows

        remotes = self.by_layer.get(layer_index)
        if not remotes:
            return None
        distinct = collect_rows(remotes, lambda: layer.run(x))
        t0 = time.perf_counter()
        values = [self.shard.pull(r.table, ids) for r, (ids, _) in zip(remotes, distinct,
                                                                        strict=True)]
        self._seconds += time.perf_counter() - t0
        rows = [BatchRows(ids, v, inverse) for (ids, inverse), v in zip(distinct, values,
                                                                        strict=True)]
        for remote, batch_rows in zip(remotes, rows, strict=True):
            remote.begin(batch_rows)
        return rows

    def push(self, layer_index: int, step: int, rows: list[Any]) -> None:
        grads = [r.gradient().detach() for r in rows]
        t0 = time.perf_counter()
        for remote, r, grad in zip(self.by_layer[layer_index], rows, grads, strict=True):
            self.shard.push(remote.table, step, r.ids, grad)
        self._seconds += time.perf_counter() - t0

    def serve_only(self, inputs: object, layers: list[Any], step: int) -> tuple[float, float]:
        """One mini-batch's pulls and pushes (zero gradients) of layer 0's tables (they read
        the batch itself), no compute: (server seconds, rows)."""
        rows = self.pull(0, layers[0], inputs)
        assert rows is not None
        for r in rows:
            r.values.grad = torch.zeros_like(r.values)
        self.push(0, step, rows)
        return self.take_seconds(), float(sum(r.ids.numel() for r in rows))

    def take_seconds(self) -> float:
        seconds, self._seconds = self._seconds, 0.0
        return seconds
