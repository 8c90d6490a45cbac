"""The contract every zoo model keeps, so the planner, profiler and runtime can share it.

A model is a *chain* of layers (what the planner sees), run over a per-batch *context*: a
dict of named tensors. The raw inputs (a dict of tensors from the data generator) start it;
every layer reads the names it declares (`reads`) and adds the tensors it produces
(`writes`, with their per-sample shapes). Branches (towers, a bottom MLP beside embeddings)
are layers in topological order that read what they need from earlier layers directly, so
no layer copies columns it merely passes along (issue 21).

A stage runs a contiguous range of layers. At a cut after layer i, the tensors that cross
are exactly those written at or before i and read after it (`ChainModel.boundary(i)`);
the runtime sends them as one [batch, width] float tensor (`pack`) and the next stage views
it back into names (`unpack`), so a boundary costs one copy, not one per layer, and its
bytes are what the planner is told.

`ChainModel.loss(output, labels)` has no parameters of its own, so the last stage computes
the loss without any other stage's state.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

Inputs = dict[str, torch.Tensor]
Batch = tuple[Inputs, torch.Tensor]  # (inputs, labels)
Context = dict[str, torch.Tensor]
Shape = tuple[int, ...]  # per sample (the batch dimension left out)


class ChainLayer(nn.Module):
    """One planner-visible layer. `kind` is "embedding" for sparse tables, else "dense".

    `forward(*tensors)` takes the context tensors named by `reads`, in order, and returns
    one tensor per name in `writes` (a tuple when there are several).
    """

    def __init__(self, name: str, kind: str = "dense", shardable: bool = False,
                 reads: Sequence[str] = ("x",), writes: dict[str, Shape] | None = None) -> None:
        super().__init__()
        self.layer_name = name
        self.kind = kind
        self.shardable = shardable
        self.reads = tuple(reads)
        self.writes: dict[str, Shape] = dict(writes or {})

    @property
    def is_sparse(self) -> bool:
        return self.kind == "embedding"

    def run(self, context: Context) -> Context:
        """This layer's outputs by name, reading its inputs from `context`."""
        out = self(*[context[name] for name in self.reads])
        if len(self.writes) == 1:
            return {next(iter(self.writes)): out}
        return dict(zip(self.writes, out, strict=True))


class ChainError(ValueError):
    """A chain whose layers read names nothing wrote, or that cannot cross a cut."""


class ChainModel(nn.Module):
    """A sequence of `ChainLayer`s over a context, plus a parameter-free loss.

    `inputs`: per-sample shapes of the float inputs read after layer 0 (they can cross a cut);
    `output`: the name the loss reads (default: the last layer's only output).
    """

    def __init__(self, layers: list[ChainLayer], inputs: dict[str, Shape] | None = None,
                 output: str | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self._chain: list[ChainLayer] = list(layers)
        self.input_shapes: dict[str, Shape] = dict(inputs or {})
        if output is None:
            last = list(layers[-1].writes)
            if len(last) != 1:
                raise ChainError(f"{layers[-1].layer_name}: the last layer must write one "
                                 f"tensor (the output), writes {last}")
            output = last[0]
        self.output = output
        self._boundaries = _boundaries(self._chain, self.input_shapes)

    @property
    def chain(self) -> list[ChainLayer]:
        """The layers, typed (`layers` is the ModuleList that owns them)."""
        return self._chain

    def forward(self, inputs: Inputs) -> torch.Tensor:
        return self.run_context(dict(inputs), 0, len(self._chain) - 1)[self.output]

    def run_context(self, context: Context, first: int, last: int) -> Context:
        """Layers first..last inclusive on `context`, which gains their outputs."""
        for layer in self._chain[first : last + 1]:
            context.update(layer.run(context))
        return context

    def run_layers(self, x: Any, first: int, last: int) -> torch.Tensor:
        """The unit of work of one pipeline stage: from the inputs dict (first == 0) or the
        packed boundary before `first`, to the packed boundary after `last` (or the output)."""
        context = dict(x) if first == 0 else self.unpack(x, first - 1)
        self.run_context(context, first, last)
        if last == len(self._chain) - 1:
            return context[self.output]
        return self.pack(context, last)

    def boundary(self, i: int) -> list[tuple[str, Shape]]:
        """The tensors that cross a cut after layer i: written at or before i (or inputs),
        read after it; in a fixed order, with their per-sample shapes."""
        return self._boundaries[i]

    def pack(self, context: Context, i: int) -> torch.Tensor:
        """The boundary after layer i as one [batch, width] tensor (no copy for one 2-D
        tensor)."""
        parts = [context[name] for name, _ in self._boundaries[i]]
        if len(parts) == 1 and parts[0].dim() == 2:
            return parts[0]
        return torch.cat([p.reshape(p.shape[0], -1) for p in parts], dim=1)

    def unpack(self, x: torch.Tensor, i: int) -> Context:
        """Named views into a packed boundary after layer i."""
        names = self._boundaries[i]
        widths = [math.prod(shape) for _, shape in names]
        parts = x.split(widths, dim=1) if len(names) > 1 else (x,)
        return {name: part.reshape(part.shape[0], *shape)
                for (name, shape), part in zip(names, parts, strict=True)}

    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


def _boundaries(chain: list[ChainLayer], inputs: dict[str, Shape]) -> list[list[tuple[str, Shape]]]:
    """boundary(i) for every cut i = 0..n-2, checking that every name read was written."""
    written: dict[str, tuple[int, Shape | None]] = {}  # name -> (writer index, shape)
    last_read: dict[str, int] = {}
    for i, layer in enumerate(chain):
        for name in layer.reads:
            if name not in written and i > 0 and name not in inputs:
                raise ChainError(f"{layer.layer_name} reads {name!r}, which no earlier layer "
                                 "writes (an input read after layer 0 needs its shape in "
                                 "`inputs`)")
            last_read[name] = i
        if i == 0:
            for name in layer.reads:
                written.setdefault(name, (-1, inputs.get(name)))
        for name, shape in layer.writes.items():
            if name in written or name in inputs:
                raise ChainError(f"{layer.layer_name} writes {name!r}, which is already in the "
                                 "context (every name is written once)")
            written[name] = (i, tuple(shape))
    for name, shape in inputs.items():
        written.setdefault(name, (-1, tuple(shape)))
    cuts = []
    for i in range(len(chain) - 1):
        cut: list[tuple[str, Shape]] = []
        for name, (at, declared) in written.items():
            if at > i or last_read.get(name, -1) <= i:
                continue
            if declared is None:
                raise ChainError(f"{name!r} is read after layer {chain[i].layer_name} but is "
                                 "a raw input with no declared shape")
            cut.append((name, declared))
        cuts.append(cut)
    return cuts


@dataclass(frozen=True)
class ModelConfig:
    """Sizes a model is built with; `production` variants have tables of tens of GB."""

    vocab_sizes: tuple[int, ...] = ()
    embedding_dim: int = 10
    hidden: tuple[int, ...] = (400, 400, 400)
    extra: dict[str, Any] = field(default_factory=dict)


class ZooModel:
    """A registered zoo entry: builds the module and generates matching synthetic data."""

    name: ClassVar[str]
    description: ClassVar[str]
    default_batch_size: ClassVar[int] = 1000
    # What its users train it with (heterps_core.ps.optim): Adam for the CTR models.
    default_optimizer: ClassVar[str] = "sgd"

    def config(self, size: str = "small") -> ModelConfig:
        """`small` for tests and this machine, `production` for planning at real scale."""
        raise NotImplementedError

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        raise NotImplementedError

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """An endless, seeded stream of synthetic batches with realistic skew."""
        raise NotImplementedError


@dataclass(frozen=True)
class LayerSpec:
    """What the planner sees of one chain layer, derived without allocating its tables."""

    name: str
    kind: str
    parameters: int
    shardable: bool

    @property
    def is_sparse(self) -> bool:
        return self.kind == "embedding"


def layer_specs(model: ChainModel) -> list[LayerSpec]:
    """The declared chain of a built model (works on the `meta` device, so tables of tens of GB
    cost nothing to describe)."""
    return [
        LayerSpec(
            name=layer.layer_name,
            kind=layer.kind,
            parameters=sum(p.numel() for p in layer.parameters()),
            shardable=layer.shardable,
        )
        for layer in model.layers
        if isinstance(layer, ChainLayer)
    ]


def chain_of(zoo_model: ZooModel, config: ModelConfig) -> list[LayerSpec]:
    """`zoo_model`'s layer chain for `config`, built on the meta device (no memory used)."""
    with torch.device("meta"):
        model = zoo_model.build(config)
    return layer_specs(model)


def split_inputs(inputs: Inputs, parts: int, device: torch.device) -> list[Inputs]:
    """Micro-batches of a batch-first inputs dict, on `device`."""
    split = {key: value.to(device).tensor_split(parts) for key, value in inputs.items()}
    return [{key: chunks[i] for key, chunks in split.items()} for i in range(parts)]
