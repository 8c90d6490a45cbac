"""Profiler accuracy: the sum of profiled layer times of a stage vs. the measured time of running
that stage's layers together (forward + backward), for every zoo model, on this CPU.

    .venv/bin/python bench/profiler.py                      # the documented run, writes the doc
    .venv/bin/python bench/profiler.py --quick --out -      # a smoke run, prints the tables

A stage is every contiguous run of two or more layers. Layers and stages are timed in
interleaved rounds (one timed run of each per round, after warm-up rounds), so load from other
processes hits both sides of a comparison alike; each figure is the median over rounds. The
target is an error within 10% for stages of at least 1 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core import zoo  # noqa: E402
from heterps_core.profiler.chain import StageRunner, boundary_tensors  # noqa: E402
from heterps_core.profiler.measure import CLOCKS, Measurement  # noqa: E402

MIN_STAGE_S = 1e-3
CLOCK_TEXT = {
    "cpu": "CPU time of the one thread doing the work, so time slices other processes take "
           "on this shared machine do not count",
    "wall": "elapsed time, which includes time slices other processes take",
}
TARGET = 0.10


@dataclass
class StageResult:
    model: str
    first: int
    last: int
    names: str
    summed_s: float
    measured: Measurement

    @property
    def error(self) -> float:
        return (self.summed_s - self.measured.median_s) / self.measured.median_s


def measure_model(name: str, size: str, batch_size: int | None, warmup: int,
                  rounds: int, clock: str) -> list[StageResult]:
    model_def = zoo.get(name)
    config = model_def.config(size)
    model = model_def.build(config, seed=0)
    batch_size = batch_size or model_def.default_batch_size
    inputs, labels = next(model_def.batches(config, batch_size, seed=0))
    boundaries = boundary_tensors(model, inputs)
    n = len(model.layers)
    units = [(i, i) for i in range(n)] + [(i, j) for i in range(n) for j in range(i + 1, n)]
    runners = {u: StageRunner(model, boundaries, labels, *u) for u in units}
    samples: dict[tuple[int, int], list[float]] = {u: [] for u in units}
    timer = CLOCKS[clock]
    for r in range(warmup + rounds):
        for unit, runner in runners.items():
            state = runner.prepare()
            start = timer()
            runner.run(state)
            if r >= warmup:
                samples[unit].append(timer() - start)
    layer_median = {i: statistics.median(samples[(i, i)]) for i in range(n)}
    names = [layer.layer_name for layer in model.layers]
    return [
        StageResult(
            model=name, first=i, last=j, names=f"{names[i]}..{names[j]}",
            summed_s=sum(layer_median[k] for k in range(i, j + 1)),
            measured=Measurement.of(samples[(i, j)], warmup, clock),
        )
        for (i, j) in units if j > i
    ]


def summary_rows(results: list[StageResult]) -> list[str]:
    rows = []
    for name in dict.fromkeys(r.model for r in results):
        mine = [r for r in results if r.model == name]
        big = [r for r in mine if r.measured.median_s >= MIN_STAGE_S]
        if not big:
            rows.append(f"| {name} | {len(mine)} | 0 | - | - | - | - |")
            continue
        errors = [abs(r.error) for r in big]
        worst = max(big, key=lambda r: abs(r.error))
        within = sum(e <= TARGET for e in errors)
        spread = statistics.median(r.measured.spread for r in big)
        rows.append(
            f"| {name} | {len(mine)} | {len(big)} | {statistics.median(errors):.1%} | "
            f"{abs(worst.error):+.1%} ({worst.names}) | {within}/{len(big)} | {spread:.0%} |"
        )
    return rows


def detail_rows(results: list[StageResult]) -> list[str]:
    rows = []
    for r in results:
        whole_or_split = r.first == 0 or r.last == max(x.last for x in results
                                                        if x.model == r.model)
        if not whole_or_split:
            continue
        rows.append(
            f"| {r.model} | {r.names} | {r.summed_s * 1e3:.3f} | {r.measured.median_s * 1e3:.3f} "
            f"| {r.error:+.1%} | {r.measured.spread:.0%} |"
        )
    return rows


def render(results: list[StageResult], args: argparse.Namespace, started: str,
           load: tuple[str, str], elapsed: float) -> str:
    big = [r for r in results if r.measured.median_s >= MIN_STAGE_S]
    errors = sorted(abs(r.error) for r in big)
    overall = (f"Over all {len(big)} stages of at least 1 ms: median error "
               f"{statistics.median(errors):.1%}, worst {errors[-1]:.1%}, "
               f"{sum(e <= TARGET for e in errors)}/{len(big)} within {TARGET:.0%}."
               if big else "No stage took 1 ms or more.")
    command = "python bench/profiler.py " + " ".join(sys.argv[1:])
    return "\n".join([
        "# Profiler accuracy: sum of layer times vs. the stage run as one",
        "",
        f"Measured {started} UTC on `{platform.node() or 'this machine'}`: "
        f"{_cpu_model()}, {os.cpu_count()} cores shared with other work (load average "
        f"{load[0]} at the start, {load[1]} at the end), torch {torch.__version__}, "
        f"{args.threads} torch thread(s), clock `{args.clock}` ({CLOCK_TEXT[args.clock]}), "
        f"`{args.size}` model sizes, each model's default "
        f"batch size{'' if args.batch_size is None else f' overridden to {args.batch_size}'}. "
        f"{args.warmup} warm-up rounds, then {args.rounds} timed rounds; in each round every "
        "layer and every stage runs once (forward + backward, sparse embedding gradients), so "
        "background load hits both sides of each comparison alike. A figure is the median "
        f"over rounds. Total run time {elapsed:.0f} s.",
        "",
        f"Command: `{command}`",
        "",
        "Stages are all contiguous runs of two or more layers. Error = (sum of the layers' "
        "medians - the stage's median) / the stage's median. Spread = (p90 - p10) / median of "
        "the stage's samples: how noisy the machine was.",
        "",
        f"**{overall}** Target: within 10% for stages of at least 1 ms.",
        "",
        "| model | stages | stages >= 1 ms | median abs. error | worst error (stage) "
        "| within 10% | median spread |",
        "|---|---:|---:|---:|---|---:|---:|",
        *summary_rows(results),
        "",
        "## Prefix and suffix stages (the cuts a two-stage plan makes), of any duration",
        "",
        "| model | stage | sum of layers (ms) | stage measured (ms) | error | spread |",
        "|---|---|---:|---:|---:|---:|",
        *detail_rows(results),
        "",
    ])


def _cpu_model() -> str:
    from heterps_core.profiler.calibrate import _cpu_model as cpu_model

    return cpu_model()


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(zoo.names()))
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", default="cpu", choices=tuple(CLOCKS),
                        help="cpu: this thread's CPU time (needs --threads 1); wall: elapsed")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few rounds")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "profiler.md"),
                        help="markdown file, or - for stdout")
    args = parser.parse_args()
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu needs --threads 1")
    if args.quick:
        args.size, args.rounds, args.warmup = "tiny", 5, 1
    torch.set_num_threads(args.threads)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    load_start = _load()
    t0 = time.perf_counter()
    results: list[StageResult] = []
    for name in args.models.split(","):
        print(f"{name} ...", file=sys.stderr, flush=True)
        results += measure_model(name, args.size, args.batch_size, args.warmup, args.rounds,
                                 args.clock)
    text = render(results, args, started, (load_start, _load()), time.perf_counter() - t0)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
