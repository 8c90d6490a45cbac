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
