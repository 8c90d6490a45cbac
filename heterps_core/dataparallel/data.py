"""Per-worker data shards of any batch size, cut from a zoo model's seeded batch stream.

DLB changes batch sizes during a run, while `ZooModel.batches` yields a fixed size; a
`ShardStream` buffers the stream and serves any number of samples in order.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from heterps_core.zoo.base import Batch, Inputs


class ShardStream:
    def __init__(self, batches: Iterator[Batch]) -> None:
        self._batches = batches
        self._parts: list[Batch] = []
        self._buffered = 0

    def take(self, n: int) -> Batch:
        """The next `n` samples of the stream."""
        while self._buffered < n:
            inputs, labels = next(self._batches)
            self._parts.append((inputs, labels))
            self._buffered += len(labels)
        merged = _concat(self._parts)
        head, tail = _split(merged, n)
        self._parts = [tail] if len(tail[1]) else []
        self._buffered -= n
        return head


def _concat(parts: list[Batch]) -> Batch:
    if len(parts) == 1:
        return parts[0]
    keys = parts[0][0].keys()
    inputs: Inputs = {k: torch.cat([p[0][k] for p in parts]) for k in keys}
    return inputs, torch.cat([p[1] for p in parts])


def _split(batch: Batch, n: int) -> tuple[Batch, Batch]:
    inputs, labels = batch
    head = ({k: v[:n] for k, v in inputs.items()}, labels[:n])
    tail = ({k: v[n:] for k, v in inputs.items()}, labels[n:])
    return head, tail
