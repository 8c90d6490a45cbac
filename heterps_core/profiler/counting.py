"""Counting what a fwd+bwd pass does (FLOPs, bytes through memory, kernels) by intercepting
every ATen operator, for the roofline estimate of hardware we cannot measure on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from heterps_core.hardware.roofline import OpCount

# Table lookups read only the rows they gather, not the whole table they receive.
_GATHER_OPS = {
    "embedding",
    "_embedding_bag",
    "_embedding_bag_forward_only",
    "index_select",
    "index",
    "gather",
}


class _TrafficMode(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0.0
        self.kernels = 0

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        if func.is_view or func.overloadpacket.__name__ in ("detach", "alias", "lift_fresh"):
            return out  # views move no data and launch nothing
        out_bytes = sum(_nbytes(t) for t in tree_leaves(out))
        in_sizes = [_nbytes(t) for t in tree_leaves((args, kwargs))]
        if func.overloadpacket.__name__ in _GATHER_OPS:
            in_sizes = [min(size, out_bytes) for size in in_sizes]
        self.bytes += out_bytes + sum(in_sizes)
        self.kernels += 1
        return out


def _nbytes(value: Any) -> int:
    if not isinstance(value, torch.Tensor):
        return 0
    if value.is_sparse:
        return _nbytes(value._values()) + _nbytes(value._indices())
    return value.numel() * value.element_size()


def count_ops(fn: Callable[[], object]) -> OpCount:
    """Run `fn` once (fwd and bwd) and count what its ATen operators do."""
    traffic = _TrafficMode()
    flops = FlopCounterMode(display=False)
    with flops, traffic:
        fn()
    return OpCount(flops=float(flops.get_total_flops()), bytes=traffic.bytes,
                   kernels=traffic.kernels)
