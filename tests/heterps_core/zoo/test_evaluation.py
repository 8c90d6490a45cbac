import math

import pytest
import torch

from heterps_core.zoo.evaluation import auc


def brute_force_auc(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_auc_of_a_hand_computed_example_with_ties():
    # Positives 0.9, 0.4, 0.4; negatives 0.4, 0.1. Pairs: 0.9 beats both (2), each 0.4
    # positive ties the 0.4 negative (0.5) and beats 0.1 (1): (2 + 1.5 + 1.5) / 6 = 5/6.
    scores = torch.tensor([0.9, 0.4, 0.4, 0.4, 0.1])
    labels = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0])
    assert auc(scores, labels) == pytest.approx(5 / 6, abs=1e-12)


def test_auc_extremes_and_one_class():
    labels = torch.tensor([0.0, 0.0, 1.0, 1.0])
    assert auc(torch.tensor([0.1, 0.2, 0.3, 0.4]), labels) == 1.0
    assert auc(torch.tensor([0.4, 0.3, 0.2, 0.1]), labels) == 0.0
    assert auc(torch.tensor([0.5, 0.5, 0.5, 0.5]), labels) == 0.5
    assert auc(torch.tensor([0.1, 0.2]), torch.tensor([1.0, 1.0])) is None


def test_auc_equals_the_pairwise_definition_on_random_data_with_many_ties():
    gen = torch.Generator().manual_seed(3)
    for _ in range(20):
        n = int(torch.randint(2, 60, (1,), generator=gen))
        scores = torch.randint(0, 6, (n,), generator=gen).to(torch.float32) / 5
        labels = torch.randint(0, 2, (n,), generator=gen)
        if labels.min() == labels.max():
            continue
        expected = brute_force_auc(scores.tolist(), labels.tolist())
        assert auc(scores, labels) == pytest.approx(expected, abs=1e-12)
        assert not math.isnan(expected)
