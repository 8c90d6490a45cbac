from __future__ import annotations

import torch

from heterps_core.dataparallel.compression import TopK, plain


def test_topk_keeps_the_largest_magnitudes() -> None:
    update = torch.tensor([0.1, -5.0, 0.2, 3.0, -0.3, 0.0, 1.0, 0.05, -0.01, 0.02])
    payload = TopK(0.2, error_feedback=False).compress(0, update)
    assert torch.equal(payload.update, torch.tensor([0, -5.0, 0, 3.0, 0, 0, 0, 0, 0, 0]))
    assert payload.nbytes == 2 * 8
    assert plain(update).nbytes == 10 * 4  # 9 of 10 entries non-zero: dense is cheaper


def test_an_uncompressed_update_with_few_changes_goes_as_index_value_pairs() -> None:
    update = torch.zeros(100)
    update[[3, 50, 97]] = torch.tensor([1.0, -2.0, 0.5])
    payload = plain(update)
    assert payload.nbytes == 3 * 8
    assert torch.equal(payload.update, update)


def test_error_feedback_delays_but_never_loses_an_update() -> None:
    gen = torch.Generator().manual_seed(0)
    topk = TopK(0.1, error_feedback=True)
    total_in = torch.zeros(100)
    total_sent = torch.zeros(100)
    for _ in range(30):
        update = torch.randn(100, generator=gen)
        total_in += update
        total_sent += topk.compress(3, update).update
    residual = total_in - total_sent
    assert topk.residual_norm(3) == torch.linalg.norm(residual).item()
    assert torch.allclose(total_sent + topk._residual[3], total_in, atol=1e-5)


def test_without_error_feedback_the_rest_is_dropped() -> None:
    topk = TopK(0.5, error_feedback=False)
    topk.compress(0, torch.tensor([4.0, 1.0]))
    assert torch.equal(topk.compress(0, torch.tensor([0.0, 2.0])).update, torch.tensor([0.0, 2.0]))
    assert topk.residual_norm(0) == 0.0


def test_residuals_are_per_worker() -> None:
    topk = TopK(0.5, error_feedback=True)
    topk.compress(0, torch.tensor([4.0, 1.0]))
    # Worker 1 has no residual: its own largest entry goes out.
    assert torch.equal(topk.compress(1, torch.tensor([0.0, 0.5])).update, torch.tensor([0.0, 0.5]))
    # Worker 0's unsent 1.0 is added to its next update.
    assert torch.equal(topk.compress(0, torch.tensor([0.0, 0.5])).update, torch.tensor([0.0, 1.5]))
