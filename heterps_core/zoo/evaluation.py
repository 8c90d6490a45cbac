"""Held-out metrics of a click model: logloss and the exact (rank-based) AUC."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from heterps_core.zoo.base import ChainModel


@dataclass(frozen=True)
class HeldOut:
    """A model's metrics on the held-out set after `step` mini-batches."""

    step: int
    samples: int
    logloss: float
    auc: float | None  # None when the held-out labels are all one class


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
    scores = output.reshape(-1) if output.numel() == labels.numel() else None
    return HeldOut(
        step=step,
        samples=int(labels.shape[0]),
        logloss=loss,
        auc=auc(scores, labels) if scores is not None else None,
    )
