"""Issue 24 item 1, "measure both": two pipeline stages co-located in one process, each on a
thread of its own, against the plain loop on 2 threads, on 2 cores.

    .venv/bin/python bench/colocate.py [--rounds 3] [--steps 200] [--optimizers adam,sgd]
                                       [--size small] [--out docs/benchmarks/colocate.md]

The runtime runs each stage as a process of its own (2 stages async: the embedding stage,
with its tables' rows served in its process, and the dense stage). The other shape the issue
names is both stages in one process with their own threads. This runs that shape from the
runtime's own parts, without its plumbing: CTR-DNN `small`, batch 1,000, the 2-stage split
of bench/chain_plans.py (embedding layer / the rest), the async schedule (stage 1 forwards
mini-batch m + 1 while stage 2 runs m, then pushes m's rows), activations and gradients
handed over by queues instead of gloo. Stage 1 holds its tables either as the runtime does
(its `PSClient` over the job's `InProcessShards`, compiled from the same plan) or as the
plain loop does (torch's `EmbeddingBag` and sparse optimiser); stage 2 runs the dense layers
with the dense optimiser. Each thread sets its own intra-op thread count (OpenMP keeps it per
calling thread).

Shapes, alternated round by round against the plain loop on 2 threads (paired ratios):
- co-located, the tables in torch's embeddings or on the in-process shard, the embedding
  thread's torch ops on 1 or 2 intra-op threads, the dense thread's on 2;
- processes: what the runtime runs, `heterps run` of the 2-stage plan, async, 1
  micro-batch (bench/speed.py's `async1`).

Writes the paired ratios to `--out` (docs/benchmarks/colocate.md), keeping the hand-written
reading after its marker, and logs each round's samples/s to stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chain_plans import chain_plan  # noqa: E402
from bench.speed import CASES, load_text, run_case, write_plans, write_report  # noqa: E402
from heterps_core.cli.run_config import default_lr  # noqa: E402
from heterps_core.ps import optim  # noqa: E402
from heterps_core.runtime.compile import RunConfig, compile_run  # noqa: E402
from heterps_core.runtime.datasource import replica_batches  # noqa: E402
from heterps_core.runtime.metrics import Clock  # noqa: E402
from heterps_core.runtime.models import resolve_model  # noqa: E402
from heterps_core.runtime.ps_client import PSClient  # noqa: E402
from heterps_core.runtime.ps_inprocess import InProcessShards  # noqa: E402
from heterps_core.runtime.reference import plain_optimizers, train_plain  # noqa: E402
from heterps_core.runtime.spec import TrainSettings  # noqa: E402
from heterps_core.runtime.tables import sparse_tables  # noqa: E402
from heterps_core.zoo.base import ChainModel  # noqa: E402
from heterps_core.zoo.tables import tables_on_meta  # noqa: E402

MODEL, SIZE, BATCH = "ctr_dnn", "small", 1000
# From this line on the report is written by hand and kept across runs.
READING = "<!-- reading: written by hand, kept by bench/colocate.py -->"


def settings(optimizer: str, steps: int, size: str = SIZE) -> TrainSettings:
    return TrainSettings(model=MODEL, size=size, batch_size=BATCH, steps=steps, sync="async",
                         optimizer=optimizer, lr=default_lr(optimizer))


class _Store(dict[str, bytes]):
    """The rendezvous store's calls the in-process shards make, in a dict."""

    def set(self, key: str, value: str | bytes) -> None:
        self[key] = value.encode() if isinstance(value, str) else value

    def get(self, key: str) -> bytes:  # type: ignore[override]
        return self[key]

    def check(self, keys: list[str]) -> bool:
        return all(key in self for key in keys)

    def delete_key(self, key: str) -> bool:
        return self.pop(key, None) is not None


class _TorchRows:
    """Stage 1 as the plain loop holds its tables: torch's `EmbeddingBag`s and sparse
    optimisers."""

    def __init__(self, model: ChainModel, train: TrainSettings) -> None:
        tables = {id(ref.weight) for ref in sparse_tables(model)}
        self.optimizers = [o for o in plain_optimizers(model, train)
                           if any(id(p) in tables for g in o.param_groups for p in g["params"])]

    def begin(self, m: int, forward: Callable[[], object]) -> object:
        return None

    def update(self, m: int, pulled: object) -> None:
        for optimizer in self.optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


class _ShardRows:
    """Stage 1 as the runtime holds its tables: remote tables over the parameter-server
    shard served in its process (runtime/ps_inprocess.py), pulled and pushed per round."""

    def __init__(self, model: ChainModel, train: TrainSettings) -> None:
        plan = chain_plan(train.model, train.size, 2, train.batch_size)
        spec = compile_run(RunConfig(plan=plan, train=train))
        me = next(r for r in spec.ranks if r.role != "ps" and r.stage == 0)
        refs = sparse_tables(model)
        local = InProcessShards(spec, spec.hosted_shards(me.rank), refs, _Store())
        self.client = PSClient(spec, refs, model, Clock(), torch.device("cpu"), local)

    def begin(self, m: int, forward: Callable[[], object]) -> object:
        return self.client.begin(m, forward)

    def update(self, m: int, pulled: object) -> None:
        assert isinstance(pulled, list)
        self.client.push(m, pulled)


@dataclass(frozen=True)
class Colocated:
    throughput: float  # steady samples/s, from the first finished mini-batch on
    losses: list[float]


def colocated(train: TrainSettings, embedding_threads: int, dense_threads: int,
              shard: bool) -> Colocated:
    """The 2-stage async pipeline as two threads of this process, its tables in torch's
    embeddings or (`shard`) the runtime's in-process shard."""
    zoo = resolve_model(train.model)
    config = zoo.config(train.size)
    if shard:
        with tables_on_meta():  # the shard holds the rows
            model = zoo.build(config, seed=train.seed)
    else:
        model = zoo.build(config, seed=train.seed)
    last = len(model.layers) - 1
    rows = _ShardRows(model, train) if shard else _TorchRows(model, train)
    dense = [p for layer in list(model.layers)[1:] for p in layer.parameters()]
    dense_opt = [optim.create(train.optimizer, lr=train.lr).torch_dense(dense)]
    batches = replica_batches(train, zoo, config)
    forward: queue.Queue[tuple[torch.Tensor, torch.Tensor] | None] = queue.Queue(maxsize=1)
    backward: queue.Queue[torch.Tensor] = queue.Queue(maxsize=1)
    done_at: list[float] = []
    losses: list[float] = []
    errors: list[BaseException] = []

    def embedding_stage() -> None:
        try:
            torch.set_num_threads(embedding_threads)
            pending: tuple[int, torch.Tensor, object] | None = None  # gradient due
            for m in range(train.steps):
                inputs, labels = next(batches)
                pulled = rows.begin(m, partial(model.run_layers, inputs, 0, 0))
                y = model.run_layers(inputs, 0, 0)
                forward.put((y.detach(), labels))
                if pending is not None:  # async: m's update after m + 1's forward
                    _update(pending, backward.get(), rows)
                pending = (m, y, pulled)
            forward.put(None)
            assert pending is not None
            _update(pending, backward.get(), rows)
        except BaseException as exc:
            errors.append(exc)
            forward.put(None)

    def dense_stage() -> None:
        try:
            torch.set_num_threads(dense_threads)
            while (item := forward.get()) is not None:
                x, labels = item
                x.requires_grad_(True)
                loss = model.loss(model.run_layers(x, 1, last), labels)
                loss.backward()
                losses.append(float(loss.detach()))
                assert x.grad is not None
                backward.put(x.grad)
                for optimizer in dense_opt:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                done_at.append(time.perf_counter())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=embedding_stage), threading.Thread(target=dense_stage)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return Colocated((len(done_at) - 1) * train.batch_size / (done_at[-1] - done_at[0]), losses)


def _update(pending: tuple[int, torch.Tensor, object], grad: torch.Tensor,
            rows: _TorchRows | _ShardRows) -> None:
    m, y, pulled = pending
    y.backward(grad)
    rows.update(m, pulled)


@dataclass(frozen=True)
class Shape:
    label: str
    threads: tuple[int, int] = (0, 0)  # (embedding, dense) intra-op threads; (0, 0): processes
    shard: bool = False


SHAPES = (
    Shape("co-located, tables in torch's embeddings, threads 1 + 2", (1, 2)),
    Shape("co-located, tables in torch's embeddings, threads 2 + 2", (2, 2)),
    Shape("co-located, tables on the in-process shard, threads 1 + 2", (1, 2), shard=True),
    Shape("co-located, tables on the in-process shard, threads 2 + 2", (2, 2), shard=True),
    Shape("processes: `heterps run`, 2 stages async, 1 micro-batch (what the runtime runs)"),
)


def measure(optimizer: str, rounds: int, steps: int, size: str, plans: dict[int, Path],
            env: dict[str, str]) -> dict[str, list[float]]:
    """Per shape, its samples/s over the 2-thread plain loop's of the same round."""
    train = settings(optimizer, steps, size)
    async1 = next(case for case in CASES if case.key == "async1")
    ratios: dict[str, list[float]] = {shape.label: [] for shape in SHAPES}
    for r in range(rounds):
        order = SHAPES if r % 2 == 0 else tuple(reversed(SHAPES))
        plain = train_plain(train, threads=2).throughput
        line = [f"{optimizer} round {r + 1}: plain loop 2 threads {plain:,.0f}"]
        for shape in order:
            if shape.threads == (0, 0):
                rate, _ = run_case(async1, optimizer, size, steps, plans, True, env)
            else:
                rate = colocated(train, *shape.threads, shard=shape.shard).throughput
            ratios[shape.label].append(rate / plain)
            line.append(f"{shape.label}: {rate:,.0f} ({rate / plain:.2f}x)")
        print("; ".join(line), file=sys.stderr, flush=True)
    return ratios


def render(results: dict[str, dict[str, list[float]]], info: dict[str, str]) -> str:
    lines = [
        "# Two stages co-located in one process, against two processes (issue 24 item 1)",
        "",
        f"Measured {info['date']} with `{info['command']}` ({info['seconds']} s), 2 CPU "
        f"cores, torch {torch.__version__}. Load average at start {info['load_start']}, at "
        f"end {info['load_end']}.",
        "",
        f"CTR-DNN `{info['size']}`, batch {BATCH:,}, {info['steps']} steps a run, {info['rounds']} "
        "alternated rounds. Each figure is the median over rounds of the shape's samples/s "
        "over the plain loop's on 2 threads in the same round (the rounds' ratios in "
        "brackets). How each shape runs: `bench/colocate.py`'s docstring.",
        "",
        "| shape | " + " | ".join(results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    for shape in SHAPES:
        cells = []
        for ratios in results.values():
            values = ratios[shape.label]
            cells.append(f"{statistics.median(values):.2f} "
                         f"({', '.join(f'{v:.2f}' for v in values)})")
        lines.append(f"| {shape.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--optimizers", default="adam,sgd")
    parser.add_argument("--size", default=SIZE)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "colocate.md"))
    args = parser.parse_args(argv)
    started, load_start = time.perf_counter(), load_text()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="heterps-colocate-") as tmp:
        plans = write_plans(Path(tmp), args.size)
        env = {**os.environ, "HETERPS_VAR_DIR": tmp}
        for optimizer in args.optimizers.split(","):
            results[optimizer.capitalize()] = measure(optimizer, args.rounds, args.steps,
                                                      args.size, plans, env)
    info = {
        "date": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "command": ("python bench/colocate.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])).strip(),
        "seconds": f"{time.perf_counter() - started:.0f}",
        "load_start": load_start, "load_end": load_text(),
        "steps": str(args.steps), "rounds": str(args.rounds), "size": args.size,
    }
    text = render(results, info)
    write_report(Path(args.out), text, READING)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
