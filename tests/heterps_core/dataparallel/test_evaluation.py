from __future__ import annotations

import pytest
import torch

from heterps_core import zoo
from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.evaluation import evaluate
from heterps_core.zoo.evaluation import auc


def test_auc_of_perfect_reversed_and_tied_scores() -> None:
    labels = torch.tensor([0.0, 0.0, 1.0, 1.0])
    assert auc(torch.tensor([0.1, 0.2, 0.8, 0.9]), labels) == 1.0
    assert auc(torch.tensor([0.9, 0.8, 0.2, 0.1]), labels) == 0.0
    assert auc(torch.tensor([0.5, 0.5, 0.5, 0.5]), labels) == 0.5
    assert auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), labels) == pytest.approx(0.75)
    assert auc(torch.tensor([0.1, 0.2]), torch.tensor([1.0, 1.0])) is None


def test_evaluate_a_ctr_model_reports_loss_and_auc() -> None:
    model = zoo.get("ctr_dnn")
    cfg = model.config("tiny")
    held = evaluate(model.build(cfg), ShardStream(model.batches(cfg, 512, seed=9)).take(512))
    assert held.logloss == pytest.approx(0.69, abs=0.05)  # an untrained binary classifier
    assert held.auc is not None and 0.3 < held.auc < 0.7
    assert held.accuracy is None
