"""Zoo speed benchmark: each zoo model's plain training loop against a hand-written reference
module of the same architecture (issue 21 item 1).

    .venv/bin/python bench/zoo_speed.py [--models ctr_dnn,dlrm] [--threads 1,2] [--steps 20]
                                        [--min-seconds 2] [--rounds 3]
                                        [--out docs/benchmarks/zoo-speed.md]

Both run in this process, one after the other within each round (alternated, so drift in the
machine's speed hits both alike), on the same pre-made mini-batches, with the same weights
(`zoo.reference.load_zoo_weights`) and the model's default optimiser (dense torch Adam or
SGD, sparse Adam or SGD for the tables). A figure is samples/s over at least `--steps`
mini-batches and `--min-seconds` after 3 warm-up steps; the ratio is the zoo's best round
over the reference's best round, and the median of the per-round ratios beside it. Goal:
at least 0.95x on 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heterps_core import zoo
from heterps_core.zoo.base import Batch
from heterps_core.zoo.reference import REFERENCES, load_zoo_weights

GOAL = 0.95
WARMUP = 3


def optimisers(module: nn.Module, kind: str, lr: float = 0.001) -> list[torch.optim.Optimizer]:
    """The model's default optimiser: torch's sparse form on tables, the dense one elsewhere."""
    tables = [m.weight for m in module.modules() if isinstance(m, nn.Embedding | nn.EmbeddingBag)]
    table_ids = {id(p) for p in tables}
    dense = [p for p in module.parameters() if id(p) not in table_ids]
    if kind == "adam":
        return [torch.optim.SparseAdam(tables, lr=lr), torch.optim.Adam(dense, lr=lr)]
    return [torch.optim.SGD(tables, lr=lr), torch.optim.SGD(dense, lr=lr)]


def loop(module: nn.Module, loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
         optimizers: list[torch.optim.Optimizer], batches: list[Batch], steps: int,
         min_s: float) -> float:
    """samples/s of the plain loop over at least `steps` mini-batches and `min_s` seconds
    after the warm-up (a fast model's few steps would be too short a sample)."""
    def step(i: int) -> None:
        inputs, labels = batches[i % len(batches)]
        loss(module(inputs), labels).backward()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    for i in range(WARMUP):
        step(i)
    start = time.perf_counter()
    done = 0
    while done < steps or time.perf_counter() - start < min_s:
        step(WARMUP + done)
        done += 1
    elapsed = time.perf_counter() - start
    return done * batches[0][1].shape[0] / elapsed


def compare(name: str, size: str, threads: int, steps: int, rounds: int,
            min_s: float) -> dict[str, object]:
    torch.set_num_threads(threads)
    model_def = zoo.get(name)
    config = model_def.config(size)
    batch_size = model_def.default_batch_size
    ours = model_def.build(config, seed=0).train()
    theirs = REFERENCES[name](config).train()
    load_zoo_weights(theirs, ours)
    stream = model_def.batches(config, batch_size, seed=1)
    batches = [next(stream) for _ in range(8)]
    kind = model_def.default_optimizer
    ours_opt, theirs_opt = optimisers(ours, kind), optimisers(theirs, kind)
    zoo_rates, ref_rates = [], []
    for _ in range(rounds):
        zoo_rates.append(loop(ours, ours.loss, ours_opt, batches, steps, min_s))
        ref_rates.append(loop(theirs, ours.loss, theirs_opt, batches, steps, min_s))
    ratio = max(zoo_rates) / max(ref_rates)
    paired = statistics.median(z / r for z, r in zip(zoo_rates, ref_rates, strict=True))
    return {"model": name, "threads": threads, "batch": batch_size, "zoo": max(zoo_rates),
            "reference": max(ref_rates), "ratio": ratio, "paired": paired}


def render(rows: list[dict[str, object]], command: str, size: str, steps: int, rounds: int,
           min_s: float, load: tuple[tuple[float, ...], tuple[float, ...]],
           elapsed: float) -> str:
    met = sum(1 for r in rows if float(str(r["ratio"])) >= GOAL)
    lines = [
        "# Zoo models against hand-written references (issue 21 item 1)",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on this machine "
        f"({os.cpu_count()} cores), torch {torch.__version__}, `{size}` sizes, each model's "
        f"default batch size and optimiser; at least {steps} timed mini-batches and "
        f"{min_s:g} s after {WARMUP} warm-up ones, best of {rounds} alternated rounds. "
        "Load average "
        f"{' '.join(f'{x:.2f}' for x in load[0])} at the start, "
        f"{' '.join(f'{x:.2f}' for x in load[1])} at the end; {elapsed:.0f} s in all.",
        "",
        f"Command: `{command}`",
        "",
        "The reference modules (`heterps_core/zoo/reference.py`) are plain PyTorch: one gather "
        "over concatenated tables (`nn.EmbeddingBag` for 2EMB's bags), `nn.Sequential` Linear "
        "chains. `tests/heterps_core/zoo/test_reference.py` loads each zoo model's weights into "
        "its reference and checks equal outputs and gradients, so both do the same work.",
        "",
        f"**{met} of {len(rows)} rows at least {GOAL}x** (ratio = zoo's best round / "
        "reference's best round; paired = median of the per-round ratios).",
        "",
        "| model | threads | batch | zoo samples/s | reference samples/s | ratio | paired | "
        f">= {GOAL} |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['threads']} | {r['batch']} | {float(str(r['zoo'])):,.0f} | "
            f"{float(str(r['reference'])):,.0f} | {float(str(r['ratio'])):.3f} | "
            f"{float(str(r['paired'])):.3f} | "
            f"{'yes' if float(str(r['ratio'])) >= GOAL else 'no'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(sorted(REFERENCES)))
    parser.add_argument("--size", default="small")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--min-seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="docs/benchmarks/zoo-speed.md")
    args = parser.parse_args()
    started, load_before = time.time(), os.getloadavg()
    rows = []
    for name in args.models.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            row = compare(name, args.size, threads, args.steps, args.rounds, args.min_seconds)
            print(f"{name} threads={threads}: zoo {row['zoo']:,.0f}/s reference "
                  f"{row['reference']:,.0f}/s ratio {row['ratio']:.3f} "
                  f"(paired {row['paired']:.3f})", flush=True)
            rows.append(row)
    command = "python bench/zoo_speed.py " + " ".join(sys.argv[1:])
    text = render(rows, command.strip(), args.size, args.steps, args.rounds, args.min_seconds,
                  (load_before, os.getloadavg()), time.time() - started)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
