"""Threads per process (issue 24.1): the 2-stage async CTR-DNN plan under several thread
layouts against the plain loop on 2 threads, side by side, alternated, paired ratios.

    .venv/bin/python bench/threads.py [--steps 300] [--rounds 3] [--optimizers adam,sgd]
        [--layouts sized,1-1,2-1] [--batch 1000]

A layout `D-E` binds the dense stage's type to `cpu:D` and the embedding stage's to `cpu:E`
(explicit: the runtime does not resize them); `sized` leaves both unbound, so the runtime
sizes every local process from the plan's predicted busy shares (runtime/threads.py);
`1stage` is the whole model in one process bound to `cpu:2` (stages co-located in one
process: option (b)'s cheapest form). Each round runs the plain loop, then every layout,
in turn; a ratio is a layout's throughput over the plain loop's of the same round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core.costmodel import evaluate  # noqa: E402
from heterps_core.plan import Plan  # noqa: E402
from heterps_core.runtime import RunConfig, TrainSettings, launch  # noqa: E402
from heterps_core.runtime.binding import parse_binding  # noqa: E402
from heterps_core.runtime.reference import train_plain  # noqa: E402
from heterps_core.runtime.throughput import run_summary  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from runtime import instance_from, link_gbps, profile  # noqa: E402


def plans(base: TrainSettings) -> tuple[Plan, Plan]:
    prof = profile(base, repeats=10)
    instance = instance_from(prof, base.batch_size, link_gbps(prof[0].output_mb))
    n = len(prof)
    return (evaluate(instance, ["cpu"] * n), evaluate(instance, ["cpu"] + ["cpu-b"] * (n - 1)))


def run_layout(layout: str, one: Plan, two: Plan, train: TrainSettings) -> tuple[float, str]:
    if layout == "1stage":
        config = RunConfig(plan=one, train=replace(train, micro_batches=1, sync="bsp"),
                           binding=parse_binding("cpu=cpu:2", ["cpu"]))
    elif layout == "sized":
        config = RunConfig(plan=two, train=train)
    else:
        dense, emb = layout.split("-")
        config = RunConfig(plan=two, train=train, binding=parse_binding(
            f"cpu=cpu:{emb},cpu-b=cpu:{dense}", ["cpu", "cpu-b"]))
    result = launch(config)
    summary = run_summary(result, train.batch_size, flushes=False)
    shares = "/".join(f"{s['busy_share']:.2f}" for s in summary["stages"])
    threads = ",".join(str(s.get("threads", "?")) for _, s in sorted(result.process_stats.items()))
    return result.throughput, f"busy {shares} threads {threads}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--optimizers", default="adam,sgd")
    parser.add_argument("--layouts", default="sized,1-1,2-1")
    args = parser.parse_args()
    layouts = args.layouts.split(",")
    plans_of: tuple[Plan, Plan] | None = None  # the layouts' shapes: one profile serves all
    for name in args.optimizers.split(","):
        lr = 0.001 if name == "adam" else 0.01
        train = TrainSettings(model="ctr_dnn", size="small", steps=args.steps,
                              batch_size=args.batch, lr=lr, optimizer=name, sync="async",
                              micro_batches=1)
        plans_of = plans_of or plans(train)
        one, two = plans_of
        ratios: dict[str, list[float]] = {k: [] for k in layouts}
        print(f"{name}: load {os.getloadavg()[0]:.2f} at start", flush=True)
        for r in range(args.rounds):
            plain = train_plain(train, threads=2).throughput
            line = [f"  round {r + 1}: plain(2) {plain:,.0f}"]
            for layout in layouts:
                got, note = run_layout(layout, one, two, train)
                ratios[layout].append(got / plain)
                line.append(f"{layout} {got:,.0f} ({got / plain:.2f}; {note})")
            print("; ".join(line), flush=True)
        for layout, values in ratios.items():
            print(f"  {name} {layout}: median ratio {statistics.median(values):.3f} "
                  f"(min {min(values):.3f}, max {max(values):.3f})", flush=True)
        print(f"{name}: load {os.getloadavg()[0]:.2f} at end", flush=True)


if __name__ == "__main__":
    main()
