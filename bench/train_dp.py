"""`heterps train-dp` (process backend) against the plain single-process loop, side by side.

Each round runs every shape once, in an order that alternates between rounds: the plain
loop (`runtime.reference.train_plain`) on 1 and 2 threads, and train-dp with the given
worker counts and modes, all on the same model, size, batch and optimiser. The ratio of a
shape is taken against the plain loop of the same round (paired), then its median over the
rounds. train-dp's samples/s are all workers' samples over the run's wall-clock time from
the moment every worker has joined (start-up and profiling not counted, as the plain
loop's first step is not); the held-out evaluation is off in both.

    .venv/bin/python bench/train_dp.py --optimizer adam --rounds 3 --steps 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from heterps_core import zoo
from heterps_core.dataparallel import TrainConfig, modes, train
from heterps_core.runtime.reference import train_plain
from heterps_core.runtime.spec import TrainSettings


def plain(args: argparse.Namespace, threads: int) -> float:
    settings = TrainSettings(model="ctr_dnn", steps=args.steps, batch_size=args.batch,
                             size=args.size, lr=args.lr, optimizer=args.optimizer)
    return train_plain(settings, threads=threads).throughput


def data_parallel(args: argparse.Namespace, workers: int, mode: str) -> float:
    model = zoo.get("ctr_dnn")
    config = TrainConfig(workers=workers, batch_size=args.batch, lr=args.lr,
                         optimizer=args.optimizer, max_steps=args.steps * workers,
                         eval_every_s=1e6, eval_samples=256, backend="process",
                         profile_warmup=1, profile_rounds=2)
    result = train(model, model.config(args.size), modes.create(mode), config)
    samples = sum(w.steps * w.batch_size for w in result.workers)
    return samples / result.time_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=40, help="per worker / plain loop")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default="plain:1,plain:2,dp:2:bsp,dp:2:asp,dp:1:bsp")
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    runs: dict[str, list[float]] = {s: [] for s in shapes}
    print(f"load average at start: {os.getloadavg()}")
    for r in range(args.rounds):
        order = shapes if r % 2 == 0 else shapes[::-1]
        for shape in order:
            kind, *rest = shape.split(":")
            start = time.perf_counter()
            rate = (plain(args, int(rest[0])) if kind == "plain"
                    else data_parallel(args, int(rest[0]), rest[1]))
            runs[shape].append(rate)
            print(f"round {r} {shape:>12}: {rate:8.0f} samples/s "
                  f"({time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.2f})",
                  flush=True)
    summary = {}
    for shape in shapes:
        row = {"samples_per_s": statistics.median(runs[shape])}
        for base in ("plain:1", "plain:2"):
            if base in runs:
                ratios = [a / b for a, b in zip(runs[shape], runs[base], strict=True)]
                row[f"vs_{base.replace(':', '')}"] = statistics.median(ratios)
        summary[shape] = row
    print(f"load average at end: {os.getloadavg()}")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
