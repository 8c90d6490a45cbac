"""Update compression: an update as it is, or its k largest entries (error feedback optional).

Bytes are counted as they would travel: 4 bytes per float32 value, plus 4 per int32 index
for a sparse message. An uncompressed update goes as (index, value) pairs when that is
smaller than dense, as a parameter server does with embedding rows nobody touched. Top-k at
ratio r therefore sends 2r of the dense bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

VALUE_BYTES = 4
INDEX_BYTES = 4


@dataclass(frozen=True)
class Payload:
    """What one push carries: the update to add (dense, zeros where nothing was sent)."""

    update: torch.Tensor
    nbytes: int


def plain(update: torch.Tensor) -> Payload:
    """The update uncompressed: dense, or its non-zero entries with indices if smaller."""
    return Payload(update, message_bytes(update.numel(), int(torch.count_nonzero(update))))


def message_bytes(numel: int, nonzero: int) -> int:
    """Bytes of the cheaper encoding of `nonzero` changed entries out of `numel`."""
    return min(numel * VALUE_BYTES, nonzero * (VALUE_BYTES + INDEX_BYTES))


class TopK:
    """Keeps the `ratio` fraction of entries largest in magnitude.

    With error feedback the entries not sent are remembered per worker and added to that
    worker's next update, so nothing is lost, only delayed.
    """

    def __init__(self, ratio: float, error_feedback: bool) -> None:
        self.ratio = ratio
        self.error_feedback = error_feedback
        self._residual: dict[int, torch.Tensor] = {}

    def k_of(self, numel: int) -> int:
        return max(1, min(numel, math.ceil(self.ratio * numel)))

    def compress(self, worker: int, update: torch.Tensor) -> Payload:
        if self.error_feedback:
            residual = self._residual.get(worker)
            if residual is not None:
                update = update + residual
        k = self.k_of(update.numel())
        indices = torch.topk(update.abs(), k, sorted=False).indices
        sent = torch.zeros_like(update)
        sent[indices] = update[indices]
        if self.error_feedback:
            self._residual[worker] = update - sent
        return Payload(sent, k * (VALUE_BYTES + INDEX_BYTES))

    def residual_norm(self, worker: int) -> float:
        residual = self._residual.get(worker)
        return 0.0 if residual is None else float(residual.norm())
