"""Held-out metrics of a zoo model, for both executors: its loss (the logloss of the click
models), the exact (rank-based) AUC for binary labels, accuracy for classes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from heterps_core.zoo.base import ChainModel


@dataclass(frozen=True)
class HeldOut:
    """A model's metrics on the held-out set after `step` mini-batches."""

    step: int
    samples: int
    logloss: float  # the model's own loss: mean binary cross-entropy for the click models
    auc: float | None  # one score per sample and 0/1 labels; None when all are one class
    accuracy: float | None = None  # one score per class


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float | None:
    """Area under the ROC curve: the probability that a random positive scores above a
    random negative, ties counting one half (Mann-Whitney U with mid-ranks).

    Exact, O(n log n); None when there are no positives or no negatives.
    """
    s = scores.detach().reshape(-1).to(torch.float64)
    y = labels.detach().reshape(-1).to(torch.float64) > 0.5
    positives = int(y.sum())
    negatives = y.numel() - positives
    if positives == 0 or negatives == 0:
        return None
    order = torch.argsort(s)
    ordered = s[order]
    # Mid-rank of every group of tied scores: ranks are 1-based.
    _, inverse, counts = torch.unique_consecutive(ordered, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).to(torch.float64)
    mid = ends - (counts.to(torch.float64) - 1.0) / 2.0
    ranks = torch.empty_like(s)
    ranks[order] = mid[inverse]
    u = float(ranks[y].sum()) - positives * (positives + 1) / 2.0
    return u / (positives * negatives)


def evaluate(model: ChainModel, inputs: dict[str, torch.Tensor], labels: torch.Tensor,
             step: int) -> HeldOut:
    """The whole model on the held-out batch, without gradients (logloss = the model's loss,
    mean binary cross-entropy for the click models; AUC of its output scores)."""
    with torch.no_grad():
        output = model(inputs)
    return metrics_of(model, output, labels, step)


def metrics_of(model: ChainModel, output: torch.Tensor, labels: torch.Tensor,
               step: int) -> HeldOut:
    with torch.no_grad():
        loss = float(model.loss(output, labels))
    held = HeldOut(step=step, samples=int(labels.shape[0]), logloss=loss, auc=None)
    if output.numel() == labels.numel() and _is_binary(labels):
        return replace(held, auc=auc(output.reshape(-1), labels))
    if output.dim() == 2 and output.shape[1] > 1 and output.shape[0] == labels.numel():
        hits = output.argmax(dim=1) == labels.reshape(-1).long()
        return replace(held, accuracy=float(hits.float().mean()))
    return held


def _is_binary(labels: torch.Tensor) -> bool:
    return bool(((labels == 0) | (labels == 1)).all())
