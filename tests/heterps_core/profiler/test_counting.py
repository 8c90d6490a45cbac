import pytest
import torch
from torch import nn

from heterps_core.profiler.counting import count_ops


def _fwd_bwd(module, x):
    def run():
        module(x).sum().backward()
    return run


def test_linear_flops_are_forward_plus_two_backward_gemms():
    layer = nn.Linear(64, 32)
    x = torch.randn(16, 64, requires_grad=True)
    count = count_ops(_fwd_bwd(layer, x))
    assert count.flops == 3 * 2 * 16 * 64 * 32
    weights = 64 * 32 * 4
    assert count.bytes >= 2 * weights + x.numel() * 4  # weight read fwd + grad written
    assert count.kernels >= 3


def test_lookups_count_rows_read_not_the_whole_table():
    ids = torch.randint(0, 1000, (32, 4))
    small = count_ops(_fwd_bwd(nn.Embedding(1_000, 8, sparse=True), ids))
    huge = count_ops(_fwd_bwd(nn.Embedding(200_000, 8, sparse=True), ids))
    assert small.flops == huge.flops == 0
    assert huge.bytes < 2 * small.bytes
    assert huge.bytes < 200_000 * 8 * 4  # far less than the table


def test_views_are_free():
    x = torch.randn(8, 8)
    assert count_ops(lambda: x.view(64)).kernels == 0
    assert count_ops(lambda: x.t().unsqueeze(0)).kernels == 0


def test_operator_classes_add_up_and_match_torch_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8))
    x = torch.randn(32, 64, requires_grad=True)
    count = count_ops(_fwd_bwd(model, x))
    assert count.classes is not None
    classes = count.classes
    assert sum(c.kernels for c in classes.values()) == count.kernels
    assert sum(c.bytes for c in classes.values()) == pytest.approx(count.bytes)
    assert classes["gemm"].flops == count.flops
    assert sum(f for f, _ in count.gemms) == count.flops and len(count.gemms) == 6
    reference = FlopCounterMode(display=False)
    with reference:
        _fwd_bwd(model, x)()
    assert count.flops == reference.get_total_flops()
    assert classes["memory"].kernels > 0 and classes["gather"].kernels == 0


def test_lookups_and_their_sparse_backward_are_gathers():
    count = count_ops(_fwd_bwd(nn.Embedding(1_000, 8, sparse=True), torch.randint(0, 1000, (64,))))
    assert count.classes is not None
    assert count.classes["gather"].kernels >= 2  # the lookup and its backward
    assert count.classes["gemm"].kernels == 0


def test_allocations_move_no_data():
    x = torch.ones(1000)
    counted = count_ops(lambda: (torch.empty(1000), x.new_empty_strided((1000,), (1,))))
    assert counted.bytes == 0 and counted.kernels == 0
