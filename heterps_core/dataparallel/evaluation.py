"""Held-out metrics: the loss, AUC for binary labels (CTR models), accuracy for classes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from heterps_core.zoo.base import Batch, ChainModel


@dataclass(frozen=True)
class HeldOut:
    loss: float
    auc: float | None
    accuracy: float | None


def evaluate(model: ChainModel, batch: Batch) -> HeldOut:
    inputs, labels = batch
    model.eval()
    with torch.no_grad():
        output = model(inputs)
        loss = float(model.loss(output, labels))
    model.train()
    if output.numel() == labels.numel() and _is_binary(labels):
        return HeldOut(loss, auc(output.reshape(-1), labels.reshape(-1)), None)
    if output.dim() == 2 and output.shape[1] > 1 and output.shape[0] == labels.numel():
        accuracy = float((output.argmax(dim=1) == labels.reshape(-1).long()).float().mean())
        return HeldOut(loss, None, accuracy)
    return HeldOut(loss, None, None)


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties averaged); None with a single class."""
    positive = labels.reshape(-1) > 0.5
    n_pos = int(positive.sum())
    n_neg = positive.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    # Imported here: worker processes never evaluate, and scipy.stats costs them seconds to load.
    from scipy.stats import rankdata

    ranks = rankdata(scores.detach().double().numpy())
    rank_sum = float(ranks[positive.numpy()].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _is_binary(labels: torch.Tensor) -> bool:
    return bool(((labels == 0) | (labels == 1)).all())
