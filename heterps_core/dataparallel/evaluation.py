"""Held-out metrics of the server's parameters: the zoo's (`zoo/evaluation.py`), in eval mode."""

from __future__ import annotations

from heterps_core.zoo.base import Batch, ChainModel
from heterps_core.zoo.evaluation import HeldOut
from heterps_core.zoo.evaluation import evaluate as evaluate_held_out


def evaluate(model: ChainModel, batch: Batch, step: int = 0) -> HeldOut:
    """The model's metrics on `batch` after `step` rounds; the model trains again after."""
    inputs, labels = batch
    model.eval()
    try:
        return evaluate_held_out(model, inputs, labels, step)
    finally:
        model.train()
