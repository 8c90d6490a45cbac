"""Input benchmark: what one stage-1 replica pays to make the mini-batches it uses.

    .venv/bin/python bench/input.py [--model ctr_dnn] [--size small] [--batches 40] [--out FILE]

Before (issue 14 item 7): every replica of k generated the model's whole seeded stream and
kept every k-th mini-batch. After: `zoo.data.indexed_batches` makes only the replica's own.
Also the Criteo reader: parsing the sample file's lines for one replica of k. One thread,
the fastest of 3 repeats; writes a markdown table (default docs/benchmarks/input.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heterps_core import zoo
from heterps_core.zoo.base import Batch
from heterps_core.zoo.criteo import criteo_stream
from heterps_core.zoo.data import indexed_batches

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "criteo_sample.tsv"


def whole_stream_kept(stream: Iterator[Batch], k: int) -> Iterator[Batch]:
    """The old way: generate everything, keep every k-th."""
    for m, batch in enumerate(stream):
        if m % k == 0:
            yield batch


def ms_per_batch(make: Callable[[], Iterator[Batch]], n: int) -> float:
    best = float("inf")
    for _ in range(3):
        stream = make()
        start = time.perf_counter()
        for _ in itertools.islice(stream, n):
            pass
        best = min(best, (time.perf_counter() - start) / n * 1e3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ctr_dnn")
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--out", default="docs/benchmarks/input.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = zoo.get(args.model)
    config = model.config(args.size)
    b, n = args.batch_size, args.batches
    rows = []
    for k in (1, 2, 4):
        before = ms_per_batch(
            lambda k=k: whole_stream_kept(model.batches(config, b, seed=0), k), n
        )
        after = ms_per_batch(
            lambda k=k: indexed_batches(model, config, b, seed=0, start=0, step=k), n
        )
        rows.append(f"| synthetic {args.model} {args.size}, batch {b} | {k} | {before:.2f} | "
                    f"{after:.2f} |")
    vocab = zoo.get("ctr_dnn").config("tiny").vocab_sizes
    for k in (1, 2, 4):
        before = ms_per_batch(
            lambda k=k: whole_stream_kept(criteo_stream(SAMPLE, 8, vocab), k), 8
        )
        after = ms_per_batch(lambda k=k: criteo_stream(SAMPLE, 8, vocab, start=0, step=k), 8)
        rows.append(f"| Criteo sample file, batch 8 | {k} | {before:.3f} | {after:.3f} |")
    load = os.getloadavg()
    text = "\n".join([
        "# Input: the cost of a stage-1 replica's mini-batches",
        "",
        f"`.venv/bin/python bench/input.py` on {dt.date.today()}, one thread, fastest of 3 x "
        f"{n} mini-batches; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on "
        f"{os.cpu_count()} cores (a shared machine: absolute numbers are noisy).",
        "",
        "ms per mini-batch the replica uses; before = every replica makes the whole stream "
        "and keeps 1/k, after = it makes (parses) only its own. The runtime read no file "
        "before; the Criteo 'before' is the same read-everything way, for comparison.",
        "",
        "| data | replicas k | before (ms) | after (ms) |",
        "|---|---:|---:|---:|",
        *rows,
        "",
    ])
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
