"""Parameter-server benchmarks -> docs/benchmarks/ps.md (each part rewrites its own section).

    .venv/bin/python bench/ps.py store [--rows 1000000,5000000,20000000] [--batch 26000]

`store`: one shard's `RowStore` (CTR-DNN rows: dim 10, float32, sparse Adam state) in one
thread, as a server process runs it. Rows are inserted by first pulls of `--batch` distinct
new ids (index insert, initial values, arena), then batches of held ids are pulled and
pushed (one Adam update). Reports time per id and bytes per row held, next to the raw
bytes of a row and its Adam moments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core.ps import RowInit, RowStore, get  # noqa: E402

DOC = ROOT / "docs" / "benchmarks" / "ps.md"
TITLE = "# Parameter-server benchmarks\n"
VOCAB = 1_560_000_000  # CTR-DNN production's rows in all: ids are drawn from that range


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())


def write_section(name: str, text: str) -> None:
    """Replace section `name` of the doc (between its markers), keeping the others."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    doc = DOC.read_text() if DOC.exists() else TITLE
    block = f"{start}\n{text.rstrip()}\n{end}"
    if start in doc and end in doc:
        doc = doc[: doc.index(start)] + block + doc[doc.index(end) + len(end) :]
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(doc)


def bench_store(sizes: list[int], batch: int, dim: int) -> str:
    torch.set_num_threads(1)
    started = dt.datetime.now(dt.UTC)
    load = _load()
    optimizer = get("adam")
    raw = dim * 4 * (1 + optimizer.states)
    rng = np.random.default_rng(0)
    lines = [
        "| rows held | insert (first pull) us/id | pull us/id | push (Adam) us/id "
        "| index B/row | arena B/row | total B/row | raw row+state B/row | total / raw "
        "| peak RSS GB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        store = RowStore(dim, RowInit("normal", 0.01, seed=1), get("adam"))
        # Distinct ids spread over the production vocabulary (a shard's share of it).
        ids = torch.from_numpy(rng.choice(VOCAB, size=size, replace=False).astype(np.int64))
        t0 = time.perf_counter()
        for part in ids.split(batch):
            store.pull(part)
        insert = (time.perf_counter() - t0) / size
        probes = [ids[torch.randint(0, size, (batch,))].unique() for _ in range(50)]
        t0 = time.perf_counter()
        for part in probes:
            store.pull(part)
        pull = (time.perf_counter() - t0) / sum(p.numel() for p in probes)
        grads = [torch.randn(p.numel(), dim) * 1e-3 for p in probes]
        t0 = time.perf_counter()
        for part, grad in zip(probes, grads, strict=True):
            store.push(part, grad, distinct=True)
        push = (time.perf_counter() - t0) / sum(p.numel() for p in probes)
        index_b = store.index.nbytes / store.rows
        arena_b = store.arena.nbytes / store.rows
        total = store.nbytes / store.rows
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        lines.append(
            f"| {size:,} | {insert * 1e6:.2f} | {pull * 1e6:.2f} | {push * 1e6:.2f} "
            f"| {index_b:.1f} | {arena_b:.1f} | {total:.1f} | {raw} | {total / raw:.2f} "
            f"| {peak:.2f} |"
        )
        print(lines[-1], flush=True)
        del store, ids, probes, grads
    head = (
        "## Store micro-benchmark (one shard's `RowStore`)\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py store "
        f"--rows {','.join(str(s) for s in sizes)} --batch {batch}`; one thread; load average "
        f"at start {load}, at end {_load()} (2 cores shared with other engineers' work).\n\n"
        f"Rows of dim {dim} (float32) with sparse Adam state (two moments), ids drawn without "
        f"repeats from {VOCAB:,} (CTR-DNN `production`). *Insert*: first pulls of batches of "
        f"{batch:,} new ids (index insert, initial values hashed from (seed, id), arena "
        f"writes). *Pull* / *push*: 50 batches of the distinct ids among {batch:,} draws from "
        "the rows held (a lookup + gather; a lookup + gather + Adam + scatter). Bytes per row "
        "count everything the store holds (arena chunks, index arrays) over the rows it "
        "holds; *raw* is the row and its two moments alone. Peak RSS is this process's "
        "(cumulative over the sizes, torch included).\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    store = sub.add_parser("store", help="the shard store alone")
    store.add_argument("--rows", default="1000000,5000000,20000000")
    store.add_argument("--batch", type=int, default=26_000)
    store.add_argument("--dim", type=int, default=10)
    args = parser.parse_args()
    if args.part == "store":
        sizes = [int(float(s)) for s in args.rows.split(",")]
        write_section("store", bench_store(sizes, args.batch, args.dim))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
