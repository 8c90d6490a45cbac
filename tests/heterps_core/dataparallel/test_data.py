from __future__ import annotations

import torch

from heterps_core import zoo
from heterps_core.dataparallel.data import ShardStream


def test_shard_stream_serves_any_size_in_stream_order() -> None:
    model = zoo.get("ctr_dnn")
    cfg = model.config("tiny")
    reference = model.batches(cfg, 50, seed=3)
    first, second = next(reference), next(reference)
    stream = ShardStream(model.batches(cfg, 50, seed=3))
    parts = [stream.take(n) for n in (7, 30, 50, 13)]
    assert [len(labels) for _, labels in parts] == [7, 30, 50, 13]
    labels = torch.cat([labels for _, labels in parts])
    assert torch.equal(labels, torch.cat([first[1], second[1]]))
    sparse = torch.cat([inputs["sparse"] for inputs, _ in parts])
    assert torch.equal(sparse, torch.cat([first[0]["sparse"], second[0]["sparse"]]))
