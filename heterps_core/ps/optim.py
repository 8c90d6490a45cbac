"""Optimisers of sparse rows, one registry: SGD, Adagrad and Adam with lazy per-row state.

Each update works on the rows a gradient touches and only on them (as torch's SparseAdam
and sparse Adagrad do): a row's state advances when the row is in the gradient, never
otherwise. The arithmetic follows torch's own sparse code step by step, so a parameter
server applying these matches `nn.Embedding(sparse=True)` trained by `torch_sparse(...)`
to float rounding.

A row's block in the store is [row | state 1 | state 2 ...], each `dim` wide: one gather
and one scatter per update. The step count (Adam's bias correction, Adagrad's lr decay) is
one per table, advanced by every update of the table whether or not it touches rows on
this shard, as torch advances it once per `optimizer.step()`.

The same names choose the dense layers' optimiser (`torch_dense`). Adding one: a class
with `name`, `states`, `update`, `torch_sparse`, `torch_dense`, and `@register`. The
registry holds the classes (`get` returns one); `create` builds one with its settings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar

import torch
from torch import nn

from heterps_core.errors import HeterPSError
from heterps_core.registry import Registry, UnknownName


class UnknownOptimizerError(HeterPSError, ValueError):
    """An optimiser name the registry does not have."""


class InvalidOptimizerError(HeterPSError, ValueError):
    """An optimiser setting that cannot be used; the message names the field."""


class SparseOptimizer:
    name: ClassVar[str]
    summary: ClassVar[str]
    states: ClassVar[int]  # state vectors per row, each as wide as the row
    default_lr: ClassVar[float]
    default_eps: ClassVar[float] = 0.0

    def __init__(self, lr: float | None = None, eps: float | None = None) -> None:
        self.lr = self.default_lr if lr is None else float(lr)
        self.eps = self.default_eps if eps is None else float(eps)
        if not self.lr > 0:
            raise ValueError(f"{self.name}: lr must be positive, got {self.lr}")
        if self.eps < 0:
            raise ValueError(f"{self.name}: eps must not be negative, got {self.eps}")

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "lr": self.lr, "eps": self.eps}

    def initial_state(self, rows: int, dim: int) -> torch.Tensor:
        """The state [rows, states * dim] of rows just created."""
        return torch.zeros(rows, self.states * dim)

    def update(self, block: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        """Apply update number `step` (1-based) in place to `block` [n, (1 + states) * dim]
        for the gradient `grad` [n, dim] of n distinct rows."""
        raise NotImplementedError

    def torch_sparse(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        """torch's optimiser for sparse tables that this class reproduces."""
        raise NotImplementedError

    def torch_dense(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        """torch's optimiser of the same name for dense layers."""
        raise NotImplementedError


OPTIMIZERS: Registry[type[SparseOptimizer]] = Registry("optimizer")


def register(cls: type[SparseOptimizer]) -> type[SparseOptimizer]:
    return OPTIMIZERS.register(cls)


def names() -> list[str]:
    return OPTIMIZERS.names()


def get(name: str) -> type[SparseOptimizer]:
    try:
        return OPTIMIZERS.get(name)
    except UnknownName as exc:
        raise UnknownOptimizerError(
            f"optimizer must be one of {', '.join(exc.known)}, got {name!r}"
        ) from None


def create(name: str, lr: float | None = None, eps: float | None = None) -> SparseOptimizer:
    """The optimiser called `name` with its settings (None: the optimiser's default)."""
    return get(name)(lr, eps)


def parse(text: str, field: str = "optimizer") -> SparseOptimizer:
    """`NAME[:lr=X][,eps=Y]`, e.g. `adam`, `adagrad:lr=0.05` or `adam:lr=0.001,eps=1e-8`."""
    name, _, options = text.strip().partition(":")
    given: dict[str, float] = {}
    for item in filter(None, (o.strip() for o in options.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in ("lr", "eps"):
            raise InvalidOptimizerError(f"{field}: {item!r} is not lr=NUMBER or eps=NUMBER")
        try:
            given[key] = float(value)
        except ValueError:
            raise InvalidOptimizerError(f"{field}: {key} must be a number, got {value!r}") from None
    if name not in OPTIMIZERS:
        raise InvalidOptimizerError(f"{field}: must be one of {', '.join(names())}, got {name!r}")
    try:
        return create(name, given.get("lr"), given.get("eps"))
    except ValueError as exc:
        raise InvalidOptimizerError(f"{field}: {exc}") from None


@register
class SGD(SparseOptimizer):
    name = "sgd"
    summary = "plain SGD: row -= lr * grad"
    states = 0
    default_lr = 0.01

    def update(self, block: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        block.add_(grad, alpha=-self.lr)

    def torch_sparse(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, lr=self.lr)

    def torch_dense(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, lr=self.lr)


@register
class Adagrad(SparseOptimizer):
    name = "adagrad"
    summary = "Adagrad: a per-row sum of squared gradients scales each row's steps"
    states = 1
    default_lr = 0.01
    default_eps = 1e-10

    def update(self, block: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        dim = grad.shape[1]
        rows, state_sum = block[:, :dim], block[:, dim:]
        state_sum.add_(grad.pow(2))
        std = state_sum.sqrt().add_(self.eps)
        rows.add_(grad / std, alpha=-self.lr)

    def torch_sparse(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adagrad(params, lr=self.lr, eps=self.eps)

    def torch_dense(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adagrad(params, lr=self.lr, eps=self.eps)


@register
class Adam(SparseOptimizer):
    name = "adam"
    summary = "Adam (lazy: only the rows in a gradient advance their moments, as SparseAdam)"
    states = 2
    default_lr = 0.001
    default_eps = 1e-8
    beta1 = 0.9
    beta2 = 0.999

    def update(self, block: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        dim = grad.shape[1]
        rows, exp_avg, exp_avg_sq = block[:, :dim], block[:, dim : 2 * dim], block[:, 2 * dim :]
        # torch.optim.SparseAdam's arithmetic, in its order.
        avg_update = grad.sub(exp_avg).mul_(1 - self.beta1)
        exp_avg.add_(avg_update)
        sq_update = grad.pow(2).sub_(exp_avg_sq).mul_(1 - self.beta2)
        exp_avg_sq.add_(sq_update)
        # torch's numerator (update + old) and denominator are the new moments, bit for bit.
        denom = exp_avg_sq.sqrt().add_(self.eps)
        step_size = self.lr * math.sqrt(1 - self.beta2**step) / (1 - self.beta1**step)
        rows.add_(-step_size * exp_avg.div(denom))

    def torch_sparse(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.SparseAdam(list(params), lr=self.lr, eps=self.eps)

    def torch_dense(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adam(params, lr=self.lr, eps=self.eps)


def is_table(module: nn.Module) -> bool:
    return isinstance(module, nn.Embedding | nn.EmbeddingBag) and bool(module.sparse)


def plain_optimizers(
    model: nn.Module, dense: SparseOptimizer, sparse: SparseOptimizer
) -> list[torch.optim.Optimizer]:
    """torch's optimisers for a whole model in one process: `sparse` on its sparse tables,
    `dense` on everything else (what a plain loop compares with a job using the same two)."""
    tables = [
        m.weight for m in model.modules() if is_table(m) and isinstance(m.weight, nn.Parameter)
    ]
    ids = {id(p) for p in tables}
    rest = [p for p in model.parameters() if id(p) not in ids]
    out: list[torch.optim.Optimizer] = []
    if tables:
        out.append(sparse.torch_sparse(tables))
    if rest:
        out.append(dense.torch_dense(rest))
    return out
