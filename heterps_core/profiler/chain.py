"""Profiling a chain model layer by layer, the way the pipeline runs it.

Each layer is timed forward + backward on its real input (the output of the layers before it,
computed once without gradients), with a fixed upstream gradient, or the loss for the last
layer. Embedding tables keep their sparse gradients, as in training. `StageRunner` does the
same for a range of layers, which is what the accuracy benchmark compares against.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from heterps_core.errors import HeterPSError
from heterps_core.profiler.calibrate import calibrate, describe, utc_now
from heterps_core.profiler.counting import count_ops
from heterps_core.profiler.measure import CLOCKS, Measurement, time_repeats
from heterps_core.profiler.result import LayerProfile, ModelProfile
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.zoo.base import Batch, ChainModel, Context, Inputs, LayerSpec, layer_specs

FLOAT_BYTES = 4
# Optimizer state per parameter, in parameter-sized tensors: (dense layers incl. their
# gradient, sparse tables whose gradients are transient row sets).
OPTIMIZER_STATE = {"adam": (3, 2), "adagrad": (2, 1), "sgd": (1, 0)}


class ProfileError(HeterPSError):
    """Profiling options that cannot work (unknown device, bad thread count, ...)."""


@dataclass(frozen=True)
class ProfileOptions:
    device: str = "cpu"
    threads: int = 2
    warmup: int = 3
    repeats: int = 10
    optimizer: str = "adam"
    clock: str = "wall"

    def check(self) -> torch.device:
        """The torch device, or a ProfileError naming the bad option."""
        if self.threads < 1:
            raise ProfileError(f"--threads must be at least 1, got {self.threads}")
        if self.repeats < 1 or self.warmup < 0:
            raise ProfileError("--repeats must be at least 1 and --warmup at least 0")
        if self.clock not in CLOCKS:
            raise ProfileError(f"--clock must be one of {', '.join(CLOCKS)}, got {self.clock!r}")
        if self.clock == "cpu" and (self.device != "cpu" or self.threads != 1):
            raise ProfileError("--clock cpu needs --device cpu --threads 1 (it counts the CPU "
                               "time of one thread, so other threads' work would be missed)")
        if self.optimizer not in OPTIMIZER_STATE:
            raise ProfileError(f"--optimizer must be one of {', '.join(OPTIMIZER_STATE)}")
        try:
            device = torch.device(self.device)
        except RuntimeError:
            raise ProfileError(f"--device: {self.device!r} is not a device (cpu, cuda:N)") from None
        if device.type == "cuda":
            if not torch.cuda.is_available():
                raise ProfileError(f"--device {self.device}: no CUDA device on this machine")
            if (device.index or 0) >= torch.cuda.device_count():
                raise ProfileError(
                    f"--device {self.device}: only {torch.cuda.device_count()} CUDA device(s)"
                )
        elif device.type != "cpu":
            raise ProfileError(f"--device: {self.device!r} is not supported (cpu, cuda:N)")
        return device


class StageRunner:
    """Forward + backward of layers first..last as one unit, on fixed inputs: the tensors the
    range reads from before it (taken from a whole forward pass), and a fixed upstream
    gradient for each tensor it writes that later layers read (or the loss, for the last)."""

    def __init__(self, model: ChainModel, context: Context, labels: torch.Tensor,
                 first: int, last: int) -> None:
        self.model = model
        self.first, self.last = first, last
        self.labels = labels
        self.is_final = last == len(model.layers) - 1
        layers = model.chain[first : last + 1]
        self.params = [p for layer in layers for p in layer.parameters()]
        written = {name for layer in layers for name in layer.writes}
        self.inputs = {name: context[name] for layer in layers for name in layer.reads
                       if name not in written}
        self.outputs = [] if self.is_final else [
            name for name, _ in model.boundary(last) if name in written]
        gen = torch.Generator(device=labels.device).manual_seed(0)
        self.grads = [torch.randn(context[name].shape, generator=gen, device=labels.device,
                                  dtype=context[name].dtype) for name in self.outputs]

    def prepare(self) -> Context:
        for p in self.params:
            p.grad = None  # as after optimizer.zero_grad(set_to_none=True)
        # Inside a stage, a layer's inputs and upstream gradients were just written by its
        # neighbours and sit in cache; reading them here gives a lone layer the same start.
        for grad in self.grads:
            grad.sum()
        if self.first == 0:
            return dict(self.inputs)
        for value in self.inputs.values():
            value.sum()
        # Like a stage's received boundary: its float tensors need their gradient.
        return {name: value.detach().requires_grad_(value.is_floating_point())
                for name, value in self.inputs.items()}

    def run(self, context: Context) -> None:
        leaves = [value for value in context.values() if value.requires_grad]
        self.model.run_context(context, self.first, self.last)
        if self.is_final:
            roots = [self.model.loss(context[self.model.output], self.labels)]
            grads: list[torch.Tensor] | None = None
        else:
            roots, grads = [context[name] for name in self.outputs], self.grads
        if not leaves:
            torch.autograd.backward(roots, grads)
            return
        # The inputs' gradients are taken as computed, not accumulated into `.grad` of a leaf:
        # accumulating copies a strided gradient (DLRM's `emb` from the interaction), a copy
        # the whole model never makes inside a stage (a cut's copy is the boundary's cost).
        params = [p for p in self.params if p.requires_grad]
        found = torch.autograd.grad(roots, [*leaves, *params], grads, allow_unused=True)
        for p, grad in zip(params, found[len(leaves):], strict=True):
            p.grad = grad

    def time(self, warmup: int, repeats: int, device: torch.device,
             clock: str = "wall") -> Measurement:
        return time_repeats(self.prepare, self.run, warmup, repeats, device, clock)


def forward_context(model: ChainModel, inputs: Inputs) -> Context:
    """Every tensor a forward pass of `model` writes, by name (computed without gradients)."""
    with torch.no_grad():
        return model.run_context(dict(inputs), 0, len(model.layers) - 1)


def boundary_bytes(model: ChainModel, context: Context, i: int) -> int:
    """Bytes that cross a cut after layer i (the output itself after the last layer)."""
    if i == len(model.layers) - 1:
        return _nbytes(context[model.output])
    return sum(_nbytes(context[name]) for name, _ in model.boundary(i))


def profile_chain(
    model: ChainModel,
    batch: Batch,
    options: ProfileOptions,
    name: str = "model",
    size: str = "custom",
    planned: Sequence[LayerSpec] | None = None,
    rows_cap: int | None = None,
    progress: ProgressCallback = no_progress,
) -> ModelProfile:
    """Time every layer of `model` on `batch`; sizes come from `planned` (the configuration the
    planner will place, default: `model` itself)."""
    device = options.check()
    specs = list(planned) if planned is not None else layer_specs(model)
    n = len(model.layers)
    if len(specs) != n:
        raise ProfileError(f"{name}: planned chain has {len(specs)} layers, model has {n}")
    with torch_threads(options.threads):
        info = describe(device, options.threads)
        progress(Progress(0, n, "calibrating the device"))
        reference = calibrate(device, info, options.clock)
        model = model.to(device).train()
        inputs = _to_device(batch[0], device)
        labels = batch[1].to(device)
        context = forward_context(model, inputs)
        measured_at = utc_now()
        layers = []
        for i in range(n):
            layer = _profile_layer(model, context, labels, i, specs[i], options, device)
            layers.append(layer)
            progress(Progress(i + 1, n, f"layer {layer.name}",
                              {"median_s": layer.time.median_s, "spread": layer.time.spread}))
    return ModelProfile(
        model=name,
        size=size,
        batch_size=int(labels.shape[0]),
        input_bytes=sum(_nbytes(t) for t in _leaves(inputs)),
        device=info,
        reference=reference,
        measured_at=measured_at,
        optimizer=options.optimizer,
        rows_cap=rows_cap,
        layers=tuple(layers),
    )


def _profile_layer(
    model: ChainModel, context: Context, labels: torch.Tensor, i: int, spec: LayerSpec,
    options: ProfileOptions, device: torch.device,
) -> LayerProfile:
    runner = StageRunner(model, context, labels, i, i)
    state = runner.prepare()  # its cache-warming reads are the harness's, not the layer's
    ops = count_ops(lambda: runner.run(state))
    sparse_bytes, sparse_rows = _sparse_rows(runner.params)
    time = runner.time(options.warmup, options.repeats, device, options.clock)
    dense_state, sparse_state = OPTIMIZER_STATE[options.optimizer]
    param_bytes = spec.parameters * FLOAT_BYTES
    optimizer_bytes = param_bytes * (sparse_state if spec.is_sparse else dense_state)
    activation = boundary_bytes(model, context, i)
    # Saved activations for backward: roughly this layer's inputs and outputs for one batch.
    layer = model.chain[i]
    saved = sum(_nbytes(context[name]) for name in layer.writes) + (
        0 if i == 0 else sum(_nbytes(context[name]) for name in layer.reads))
    return LayerProfile(
        index=i,
        name=spec.name,
        kind=spec.kind,
        shardable=spec.shardable,
        parameters=spec.parameters,
        parameter_bytes=param_bytes,
        optimizer_bytes=optimizer_bytes,
        activation_bytes=activation,
        sync_bytes=0 if spec.is_sparse else param_bytes,
        sparse_bytes=sparse_bytes,
        sparse_rows=sparse_rows,
        memory_bytes=param_bytes + optimizer_bytes + saved,
        ops=ops,
        time=time,
    )


def _sparse_rows(params: list[nn.Parameter]) -> tuple[int, int]:
    """(bytes, rows) a batch touches in sparse tables: each distinct row pulled once and
    pushed back once (the bytes count both)."""
    total = rows = 0
    for p in params:
        if p.grad is not None and p.grad.is_sparse:
            values = p.grad.coalesce()._values()
            total += 2 * _nbytes(values)
            rows += int(values.shape[0])
    return total, rows


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _to_device(inputs: Any, device: torch.device) -> Any:
    if isinstance(inputs, dict):
        return {k: v.to(device) for k, v in inputs.items()}
    return inputs.to(device)


def _leaves(inputs: Any) -> list[torch.Tensor]:
    return list(inputs.values()) if isinstance(inputs, dict) else [inputs]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
