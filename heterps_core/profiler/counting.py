"""Counting what a fwd+bwd pass does (FLOPs, bytes through memory, kernels) by intercepting
every ATen operator, for the roofline estimate of hardware we cannot measure on.

Besides the totals, every operator is put in one class, because each class runs at its own
rate on a GPU (`hardware/roofline.py`, rule operator-roofline-v2): `gemm` (an operator with
FLOPs: matrix products, kept one by one for a per-operator roofline), `gather` (embedding
lookups and their sparse backward: random rows, slower than streaming) and `memory`
(everything else: elementwise, reductions, copies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

from heterps_core.hardware.roofline import OpClass, OpCount

# Table lookups read only the rows they gather, not the whole table they receive.
_GATHER_OPS = {
    "embedding",
    "_embedding_bag",
    "_embedding_bag_forward_only",
    "index_select",
    "index",
    "gather",
}
# Operators of an embedding's sparse backward and update: scattered rows, sorting ids.
_SCATTER_OPS = {
    "embedding_dense_backward",
    "embedding_backward",
    "_embedding_bag_backward",
    "_embedding_bag_sparse_backward",
    "_embedding_bag_dense_backward",
    "_embedding_bag_per_sample_weights_backward",
    "index_add",
    "index_add_",
    "index_put",
    "index_put_",
    "scatter_add",
    "scatter_add_",
    "_sparse_coo_tensor_with_dims_and_tensors",
    "_coalesce",
    "sort",
    "unique_dim",
    "_unique2",
}
# Allocations reserve memory without reading or writing it, and launch no kernel.
_ALLOCATIONS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}


class _TrafficMode(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0.0
        self.kernels = 0
        self.flops = 0.0
        # per class: [flops, bytes, kernels]
        self.classes: dict[str, list[float]] = {
            name: [0.0, 0.0, 0.0] for name in ("gemm", "gather", "memory")
        }
        self.gemms: list[tuple[float, float]] = []

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name in ("detach", "alias", "lift_fresh") or name in _ALLOCATIONS:
            return out  # views and allocations move no data and launch nothing
        out_bytes = sum(_nbytes(t) for t in tree_leaves(out))
        in_sizes = [_nbytes(t) for t in tree_leaves((args, kwargs))]
        if name in _GATHER_OPS:
            in_sizes = [min(size, out_bytes) for size in in_sizes]
        moved = out_bytes + sum(in_sizes)
        flops = 0.0
        if func.overloadpacket in flop_registry:
            flops = float(flop_registry[func.overloadpacket](*args, **kwargs, out_val=out))
        if flops > 0:
            op_class = "gemm"
            self.gemms.append((flops, float(moved)))
        elif name in _GATHER_OPS or name in _SCATTER_OPS:
            op_class = "gather"
        else:
            op_class = "memory"
        totals = self.classes[op_class]
        totals[0] += flops
        totals[1] += moved
        totals[2] += 1
        self.flops += flops
        self.bytes += moved
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
    with traffic:
        fn()
    classes = {
        name: OpClass(flops=flops, bytes=moved, kernels=int(kernels))
        for name, (flops, moved, kernels) in traffic.classes.items()
    }
    return OpCount(flops=traffic.flops, bytes=traffic.bytes, kernels=traffic.kernels,
                   classes=classes, gemms=tuple(traffic.gemms))
