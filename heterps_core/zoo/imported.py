"""Bring your own model: split any `nn.Module` into the zoo's layer chain.

`torch.fx` traces the module; the graph is cut wherever exactly one floating-point tensor is
alive (everything later depends on it alone), and pieces without parameters join the piece
before them. If tracing fails, the module's top-level children are tried as a sequence, which
is accepted only if running them in order reproduces the module's output.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from heterps_core.errors import HeterPSError
from heterps_core.zoo.base import (
    Batch,
    ChainLayer,
    ChainModel,
    Inputs,
    ModelConfig,
    Shape,
    ZooModel,
)
from heterps_core.zoo.data import batch_seed

WHAT_TO_DO = (
    "make forward() a straight sequence of submodules (e.g. nn.Sequential) whose boundaries "
    "pass one float tensor, move data-dependent control flow inside a submodule, or implement "
    "the ChainModel contract of heterps_core.zoo.base directly"
)
_DTYPES = {"float32": torch.float32, "float": torch.float32, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "float64": torch.float64, "int64": torch.long,
           "long": torch.long, "int32": torch.int32}
_SHAPE = re.compile(r"^(?:(\w+)=)?(\w+)\[([\d,\s]+)\](?:<(\d+))?$")


class ModelImportError(HeterPSError):
    """An imported model that cannot be loaded or split, with why and what to do."""


class ImportedChain(ChainModel):
    """An imported model's chain. It brings no loss, so the output's mean stands in: the
    backward pass it drives costs the same as a real loss's."""

    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return output.float().mean()


class GraphLayer(ChainLayer):
    """Piece k of a split model: reads the model's inputs (k = 0) or piece k-1's output
    `x{k}`, writes `x{k+1}` (one tensor crosses each cut, by how the cuts were chosen)."""

    def __init__(self, name: str, kind: str, module: nn.Module, arg_names: list[str], k: int,
                 shape: Shape) -> None:
        super().__init__(name, kind=kind, shardable=kind == "embedding",
                         reads=arg_names if k == 0 else (f"x{k}",),
                         writes={f"x{k + 1}": shape})
        self.module = module

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.module(*args)


# --- loading -------------------------------------------------------------------------------


def load_factory(spec: str) -> nn.Module:
    """`package.module:factory` -> the module the factory returns."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ModelImportError(f"--import must look like package.module:factory, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelImportError(f"--import: cannot import {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise ModelImportError(f"--import: {module_name!r} has no attribute {attr!r}")
    model = factory() if callable(factory) and not isinstance(factory, nn.Module) else factory
    if not isinstance(model, nn.Module):
        raise ModelImportError(
            f"--import: {spec} must be (or return) a torch.nn.Module, got {type(model).__name__}"
        )
    return model


def load_callable(spec: str) -> Callable[[], Any]:
    """`package.module:factory` -> the factory itself (not called)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr or ":" in attr or "/" in module_name:
        raise ModelImportError(f"a factory must look like package.module:factory, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelImportError(f"cannot import {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise ModelImportError(f"{module_name!r} has no callable {attr!r}")
    return factory


class FactoryChain(ImportedChain):
    """A factory model's chain: a per-sample logit trains against the 0/1 labels of the
    synthetic batches; any other output falls back to the mean (see ImportedChain)."""

    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if output.shape == labels.shape:
            return nn.functional.binary_cross_entropy_with_logits(output.float(), labels.float())
        return super().loss(output, labels)


class FactoryModel(ZooModel):
    """An installed factory (`package.module:factory`, returning an `nn.Module`) as a zoo
    entry: traced into its chain, fed random batches shaped like its `example_input`
    attribute. Planner, profiler and runtime use it like any zoo model; every process
    rebuilds the same weights from the seed."""

    default_batch_size = 256

    def __init__(self, spec: str, example_input: str | None = None) -> None:
        factory = load_callable(spec)
        self.spec = spec
        self.name = spec  # type: ignore[misc]
        self.description = (inspect.getdoc(factory) or inspect.getdoc(  # type: ignore[misc]
            inspect.getmodule(factory)) or f"factory {spec}").splitlines()[0]
        given = example_input or getattr(factory, "example_input", None)
        if not isinstance(given, str) or not given.strip():
            raise ModelImportError(
                f"{spec}: give an example input (e.g. dense=float32[64,13]) or set the "
                "factory's `example_input` attribute to one")
        self.example_input = given
        batch = _SHAPE.match(given.split(";")[0].strip().split("=")[-1].replace(" ", ""))
        if batch and batch.group(3):
            self.default_batch_size = int(batch.group(3).split(",")[0])  # type: ignore[misc]

    def config(self, size: str = "small") -> ModelConfig:
        return ModelConfig(extra={"factory": self.spec, "example_input": self.example_input})

    def module(self, seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        return load_factory(self.spec)

    @functools.cached_property
    def _signature_module(self) -> nn.Module:
        with torch.random.fork_rng():  # leaves torch's global generator as it was
            return self.module(0)

    def build(self, config: ModelConfig, seed: int = 0) -> ChainModel:
        # Tracing runs the module, so it is built for real even where zoo models are built
        # on `meta` to read their sizes (user models are small enough for that).
        with torch.device("cpu"):
            module = self.module(seed)
            example = parse_example_input(self.example_input, module, seed=seed)
            chain = import_model(module, example, name=self.spec)
        return FactoryChain(list(chain.layers))  # type: ignore[arg-type]

    def batches(self, config: ModelConfig, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        # Only forward()'s argument names are read from it. A stage replica asks for one
        # batch per call (zoo/data.py indexed_batches): building the module (and reseeding
        # torch's global generator) each time cost as much as the step itself.
        module = self._signature_module
        gen = torch.Generator().manual_seed(seed)
        step = 0
        while True:
            inputs = parse_example_input(self.example_input, module, batch_size,
                                         seed=batch_seed(seed, step))
            labels = torch.randint(0, 2, (batch_size,), generator=gen).float()
            yield inputs, labels
            step += 1


def parse_example_input(
    spec: str, model: nn.Module, batch_size: int | None = None, seed: int = 0
) -> Inputs:
    """A .pt file (tensor, tuple or dict) or shapes such as
    `dense=float32[64,13];sparse=int64[64,26]<1000` (unnamed entries follow forward()'s
    argument order; `<N` bounds integer ids; --batch-size replaces the first dimension)."""
    arg_names = forward_arg_names(model)
    if spec.endswith(".pt"):
        return _from_file(Path(spec), arg_names)
    gen = torch.Generator().manual_seed(seed)
    inputs: Inputs = {}
    for i, part in enumerate(p.strip() for p in spec.split(";") if p.strip()):
        match = _SHAPE.match(part.replace(" ", ""))
        if not match:
            raise ModelImportError(
                f"--example-input: cannot read {part!r}; use e.g. float32[64,13] or "
                "ids=int64[64,26]<1000, separated by ';', or a .pt file"
            )
        name, dtype_name, dims, high = match.groups()
        if dtype_name not in _DTYPES:
            raise ModelImportError(f"--example-input: unknown dtype {dtype_name!r} in {part!r}; "
                                   f"known: {', '.join(_DTYPES)}")
        shape = [int(d) for d in dims.split(",") if d]
        if batch_size is not None and shape:
            shape[0] = batch_size
        if name is None:
            if i >= len(arg_names):
                raise ModelImportError(
                    f"--example-input: {len(arg_names)} argument(s) in forward(), got more")
            name = arg_names[i]
        inputs[name] = _random(shape, _DTYPES[dtype_name], int(high or 1000), gen)
    missing = [n for n in arg_names if n not in inputs]
    if missing or not inputs:
        raise ModelImportError(f"--example-input: no value for forward() argument(s) {missing}")
    return inputs


def forward_arg_names(model: nn.Module) -> list[str]:
    params = inspect.signature(model.forward).parameters.values()
    return [p.name for p in params
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _random(shape: list[int], dtype: torch.dtype, high: int, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    return torch.randint(0, high, shape, generator=gen, dtype=dtype)


def _from_file(path: Path, arg_names: list[str]) -> Inputs:
    try:
        value = torch.load(path, weights_only=True)
    except (OSError, RuntimeError) as exc:
        raise ModelImportError(f"--example-input: cannot load {path} ({exc})") from None
    if isinstance(value, torch.Tensor):
        value = (value,)
    if isinstance(value, tuple | list):
        value = dict(zip(arg_names, value, strict=False))
    if not isinstance(value, dict) or not all(isinstance(v, torch.Tensor) for v in value.values()):
        raise ModelImportError(f"--example-input: {path} must hold a tensor, tuple or dict")
    return dict(value)


# --- splitting -----------------------------------------------------------------------------


def import_model(model: nn.Module, example: Inputs, name: str = "model") -> ImportedChain:
    """Split `model` into a chain whose layers reproduce it on `example`."""
    _use_sparse_embeddings(model)
    arg_names = forward_arg_names(model)
    try:
        chain = _split_traced(model, example, arg_names)
        why = None if len(chain.layers) > 1 else "its graph has no point where a single float " \
            "tensor carries everything forward (a branch or skip connection spans the model)"
    except ModelImportError as exc:
        chain, why = None, str(exc)
    except Exception as exc:  # torch.fx raises many kinds of errors on untraceable code
        chain, why = None, f"torch.fx cannot trace it ({type(exc).__name__}: {_first_line(exc)})"
    if chain is not None and why is None:
        return chain
    children = _split_children(model, example, arg_names)
    if children is not None:
        return children
    raise ModelImportError(
        f"cannot split {name} into a layer chain: {why}; running its top-level children in "
        f"order does not reproduce its output either. What to do: {WHAT_TO_DO}"
    )


def _use_sparse_embeddings(model: nn.Module) -> None:
    # Training keeps tables on parameter servers with sparse gradients; profile it that way.
    for module in model.modules():
        if isinstance(module, nn.Embedding | nn.EmbeddingBag):
            module.sparse = True


def _split_traced(model: nn.Module, example: Inputs, arg_names: list[str]) -> ImportedChain:
    traced = fx.symbolic_trace(model)
    ShapeProp(traced).propagate(*[example[n] for n in arg_names])
    # Parameters and buffers (get_attr) are not activations: each piece re-reads its own.
    nodes = [n for n in traced.graph.nodes if n.op != "get_attr"]
    output = nodes[-1]
    pieces = []
    start = 0
    for i, boundary in _cuts(nodes):
        pieces.append((start, i, boundary))
        start = i + 1
    final = output.args[0]
    if not isinstance(final, fx.Node):
        raise ModelImportError("its forward() must return a single tensor")
    if start < len(nodes) - 1:
        pieces.append((start, len(nodes) - 2, final))
    merged = _merge_parameterless(traced, nodes, pieces)
    layers: list[ChainLayer] = []
    inputs: list[fx.Node] = [n for n in nodes if n.op == "placeholder"]
    used_names: set[str] = set()
    for k, (first, last, out) in enumerate(merged):
        body = [n for n in nodes[first : last + 1] if n.op != "placeholder"]
        module = _subgraph(traced, body, inputs, out)
        kind = "embedding" if _has_embedding(traced, body) else "dense"
        layer_name = _unique(_piece_name(body, k), used_names)
        layers.append(GraphLayer(layer_name, kind, module, arg_names, k, _per_sample(out)))
        inputs = [out]
    chain = ImportedChain(layers)
    _check_reproduces(model, chain, example, arg_names)
    return chain


def _cuts(nodes: list[fx.Node]) -> list[tuple[int, fx.Node]]:
    """Positions after which exactly one float tensor is still needed, and that tensor."""
    position = {n: i for i, n in enumerate(nodes)}
    last_use = {n: max((position.get(u, len(nodes)) for u in n.users), default=position[n])
                for n in nodes}
    cuts = []
    for i, node in enumerate(nodes[:-1]):
        if node.op == "placeholder":
            continue
        alive = [n for n in nodes[: i + 1] if last_use[n] > i]
        if len(alive) == 1 and _is_float_tensor(alive[0]):
            cuts.append((i, alive[0]))
    return cuts


def _merge_parameterless(
    traced: fx.GraphModule, nodes: list[fx.Node], pieces: list[tuple[int, int, fx.Node]]
) -> list[tuple[int, int, fx.Node]]:
    merged: list[tuple[int, int, fx.Node]] = []
    for first, last, out in pieces:
        has_params = _has_parameters(traced, nodes[first : last + 1])
        if merged and (not has_params or not _has_parameters(traced, nodes[merged[-1][0]:
                                                                            merged[-1][1] + 1])):
            merged[-1] = (merged[-1][0], last, out)
        else:
            merged.append((first, last, out))
    return merged


def _has_parameters(traced: fx.GraphModule, body: list[fx.Node]) -> bool:
    for node in body:
        if node.op == "call_module" and any(
            True for _ in traced.get_submodule(str(node.target)).parameters()
        ):
            return True
        for arg in node.all_input_nodes:
            if arg.op == "get_attr":
                return True
    return False


def _has_embedding(traced: fx.GraphModule, body: list[fx.Node]) -> bool:
    return any(
        node.op == "call_module"
        and isinstance(traced.get_submodule(str(node.target)), nn.Embedding | nn.EmbeddingBag)
        for node in body
    )


def _piece_name(body: list[fx.Node], k: int) -> str:
    for node in body:
        if node.op == "call_module":
            return str(node.target).replace(".", "_")
    return f"layer{k}"


def _unique(name: str, used: set[str]) -> str:
    candidate, i = name, 2
    while candidate in used:
        candidate, i = f"{name}_{i}", i + 1
    used.add(candidate)
    return candidate


def _subgraph(
    traced: fx.GraphModule, body: list[fx.Node], inputs: list[fx.Node], out: fx.Node
) -> fx.GraphModule:
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name if node.op == "placeholder" else "x")

    def lookup(node: fx.Node) -> fx.Node:
        if node not in env:
            if node.op != "get_attr":
                raise ModelImportError(f"internal: value {node.name} crosses a cut")
            env[node] = graph.node_copy(node, lookup)
        return env[node]

    for node in body:
        env[node] = graph.node_copy(node, lookup)
    graph.output(lookup(out))
    return fx.GraphModule(traced, graph)


def _per_sample(node: fx.Node) -> Shape:
    meta = node.meta.get("tensor_meta")
    return tuple(int(d) for d in meta.shape[1:]) if meta is not None else ()


def _is_float_tensor(node: fx.Node) -> bool:
    meta = node.meta.get("tensor_meta")
    return meta is not None and hasattr(meta, "dtype") and meta.dtype.is_floating_point


def _split_children(
    model: nn.Module, example: Inputs, arg_names: list[str]
) -> ImportedChain | None:
    children = list(model.named_children())
    if len(children) < 2 or len(arg_names) != 1:
        return None
    layers: list[ChainLayer] = []
    try:
        x: Any = example[arg_names[0]]
        for k, (name, child) in enumerate(children):
            has_emb = any(isinstance(m, nn.Embedding | nn.EmbeddingBag) for m in child.modules())
            with torch.no_grad():
                x = child(x)
            layers.append(GraphLayer(name, "embedding" if has_emb else "dense", child,
                                     arg_names, k, tuple(x.shape[1:])))
        chain = ImportedChain(layers)
        _check_reproduces(model, chain, example, arg_names)
    except (AttributeError, ModelImportError, RuntimeError, TypeError, ValueError):
        return None
    return chain


def _check_reproduces(
    model: nn.Module, chain: ImportedChain, example: Inputs, arg_names: list[str]
) -> None:
    with torch.no_grad():
        expected = model(*[example[n] for n in arg_names])
        got = chain(example)
    if not isinstance(expected, torch.Tensor) or expected.shape != got.shape or not torch.allclose(
        expected, got, rtol=1e-4, atol=1e-5
    ):
        raise ModelImportError("the split layers do not reproduce the model's output")


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""
