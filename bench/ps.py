"""Parameter-server benchmarks -> docs/benchmarks/ps.md (each part rewrites its own section).

    .venv/bin/python bench/ps.py store [--rows 1000000,5000000,20000000] [--batch 26000]
    .venv/bin/python bench/ps.py memory [--steps 3000] [--shards 1,2]
    .venv/bin/python bench/ps.py speed [--steps 200] [--repeats 3]
    .venv/bin/python bench/ps.py scale [--steps 100]
    .venv/bin/python bench/ps.py profile [--steps 600] [--label before] [--rate 100]
    .venv/bin/python bench/ps.py cache [--steps 200] [--repeats 2] [--rows 100000] [--staleness 2]
    .venv/bin/python bench/ps.py messages [--old /tmp/ps-old [--old-is TEXT]] [--rounds 3]
                                          [--messages 200] [--spy]

`messages`: one shard's time per message on CTR-DNN `small` traffic (26 tables, dim 10,
mini-batches of 1,000: each table's distinct ids of a mini-batch), async, one thread, as
its server calls it: a pull (every table's rows, one flat reply) and a push (one update of
every table) per mini-batch, for SGD, Adagrad and Adam. With `--old DIR` (a `git worktree`
of an earlier commit) the same messages go through that tree's code too, in alternated
rounds of one process per tree; `--spy` adds a py-spy profile of each.

`memory`: CTR-DNN `production` (26 fields x 60M rows, dim 10: 62 GB of rows if they all
existed), an embedding stage + a dense stage (one unit each, async), sparse Adam on the
tables and Adam on the dense layers, 1 and 2 parameter-server shards, mini-batches of
1,000: rows held, bytes per row held, and every process's peak resident memory as the
processes report it (what `heterps run` prints).

`speed`: samples/s, same model, data, batch size and optimisers, best of `--repeats`
alternated runs: (a) a plain single-process loop with 2 threads (nn.Embedding(sparse=True)
+ SparseAdam, Adam on the MLP); (b) the 2-stage plan (async); (c) one stage of 2 replicas
+ 1 shard (async). `small` and `production` (the plain loop cannot hold production tables
here: it runs at the largest size that fits, labelled).

`scale`: (b)'s time per mini-batch at 10k, 1M, 10M and 60M rows per field.

`profile`: (b) at `small` under `py-spy record --subprocesses` (pip install py-spy): per
process, its CPU seconds in training and the frames they go to (section `profile-LABEL`).

`store`: one shard's `RowStore` (CTR-DNN rows: dim 10, float32, sparse Adam state) in one
thread, as a server process runs it. Rows are inserted by first pulls of `--batch` distinct
new ids (index insert, initial values, arena), then batches of held ids are pulled and
pushed (one Adam update). Reports time per id and bytes per row held, next to the raw
bytes of a row and its Adam moments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
# The code measured: this tree, or another checkout (`messages --old`: the runs of that tree).
CODE = Path(os.environ.get("HETERPS_BENCH_CODE", ROOT))
sys.path.insert(0, str(CODE))

from heterps_core.costmodel import evaluate  # noqa: E402
from heterps_core.instance import Instance  # noqa: E402
from heterps_core.plan import Plan  # noqa: E402
from heterps_core.ps import RowInit, RowStore, get  # noqa: E402
from heterps_core.runtime import RunConfig, TrainSettings, launch  # noqa: E402
from heterps_core.runtime.launcher import RunResult  # noqa: E402
from heterps_core.runtime.reference import train_plain  # noqa: E402
from heterps_core.zoo.base import ModelConfig  # noqa: E402
from heterps_core.zoo.ctr_dnn import N_SPARSE, CtrDnn  # noqa: E402

DOC = ROOT / "docs" / "benchmarks" / "ps.md"
TITLE = "# Parameter-server benchmarks\n"
VOCAB = 1_560_000_000  # CTR-DNN production's rows in all: ids are drawn from that range


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


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


# --- models with a chosen vocabulary (workers import this file by path) --------------------


class ScaledCtr(CtrDnn):
    """CTR-DNN `small` layers with `rows` rows per field (`production` data skew)."""

    name = "scaled_ctr"
    rows = 10_000

    def config(self, size: str = "small") -> ModelConfig:
        small = super().config("small")
        return ModelConfig(vocab_sizes=(self.rows,) * N_SPARSE, embedding_dim=10,
                           hidden=small.hidden, extra=small.extra)


class Ctr10k(ScaledCtr):
    rows = 10_000


class Ctr1M(ScaledCtr):
    rows = 1_000_000


class Ctr10M(ScaledCtr):
    rows = 10_000_000


class Ctr60M(ScaledCtr):
    rows = 60_000_000  # = CTR-DNN production's rows per field


SCALED = {"10k": "Ctr10k", "1M": "Ctr1M", "10M": "Ctr10M", "60M": "Ctr60M"}


def scaled(label: str) -> str:
    return f"{Path(__file__).resolve()}:{SCALED[label]}"


def plan_of(stages: list[tuple[str, int]], n_layers: int, batch: int) -> Plan:
    """The real cost model's plan with `stages` (resource, units): with two stages the
    first holds the embedding layer. A stage whose layers take (0.1 u - 0.01) s in all
    needs exactly u units for a target of 10 mini-batches per second."""
    assignment = [stages[0][0]] + [stages[-1][0]] * (n_layers - 1)
    units = dict(stages)
    per_stage = {r: assignment.count(r) for r in units}
    instance = Instance.from_dict({
        "version": 1, "batch_size": batch, "throughput_target": 10.0 * batch,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 0.5, "count": 8,
                       "memory_gb": 64, "network_gbps": 10} for n in units],
        "layers": [{"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                    "compute_s": {n: (0.1 * units[n] - 0.01) / per_stage[n] for n in units},
                    "output_mb": 1.0, "sync_mb": 0.1, "memory_gb": 0.1, "shardable": i == 0}
                   for i in range(n_layers)],
    })
    plan = evaluate(instance, assignment)
    assert [s.units for s in plan.stages] == [u for _, u in stages], plan
    return plan


def _train(
    model: str, size: str, steps: int, batch: int = 1000, sync: str = "async"
) -> TrainSettings:
    return TrainSettings(model=model, size=size, steps=steps, batch_size=batch, lr=0.001,
                         micro_batches=1, sync=sync, optimizer="adam",
                         sparse_optimizer="adam:lr=0.001")


TWO_STAGES = [("cpu", 1), ("cpu-b", 1)]
DATA_PARALLEL = [("cpu", 2)]


def _run(train: TrainSettings, stages: list[tuple[str, int]], shards: int) -> RunResult:
    with tempfile.TemporaryDirectory(prefix="h-ps-bench-") as logs:
        return launch(RunConfig(plan=plan_of(stages, 5, train.batch_size), train=train,
                                ps_shards=shards, log_dir=logs))


# --- memory ----------------------------------------------------------------------------------


def bench_memory(steps: int, shards_list: list[int]) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    raw = 10 * 4 * 3  # a row and its two Adam moments, float32
    lines = [
        "| shards | mini-batches | rows held | bytes / row held (rows + Adam state + index) "
        "| / raw 120 B | loss first 50 -> last 50 | samples/s | peak resident GB per process "
        "| all GB |",
        "|---:|---:|---:|---:|---:|---|---:|---|---:|",
    ]
    for shards in shards_list:
        result = _run(_train("ctr_dnn", "production", steps), TWO_STAGES, shards)
        stats = result.process_stats
        rows = sum(int(s.get("rows_held", 0)) for s in stats.values())
        table_bytes = sum(int(s.get("table_bytes", 0)) for s in stats.values())
        per_row = table_bytes / rows if rows else 0.0
        peaks = [f"rank {r}: {s['peak_rss_bytes'] / 1e9:.2f}" for r, s in sorted(stats.items())]
        total = sum(s["peak_rss_bytes"] for s in stats.values()) / 1e9
        head, tail = result.losses[:50], result.losses[-50:]
        lines.append(
            f"| {shards} | {steps:,} | {rows:,} | {per_row:.1f} | {per_row / raw:.2f} "
            f"| {sum(head) / len(head):.4f} -> {sum(tail) / len(tail):.4f} "
            f"| {result.throughput:,.0f} | {'; '.join(peaks)} | {total:.2f} |"
        )
        print(lines[-1], flush=True)
    head = (
        "## Memory: CTR-DNN `production` on this machine\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py memory --steps {steps} "
        f"--shards {','.join(map(str, shards_list))}`; load average at start {load}, at end "
        f"{_load()} (2 cores shared with other engineers' work: speeds here are not "
        "representative, memory is).\n\n"
        "CTR-DNN `production`: 26 fields x 60,000,000 rows x dim 10 (1.56e9 rows, 62 GB if they "
        "all existed). Plan: embedding stage + dense stage, one unit each, every resource "
        "bound to this CPU (one thread each), async, Adam on the dense layers, sparse Adam "
        "(lr 0.001) on the tables, mini-batches of 1,000. *Rows held*: rows the shards "
        "created (pulled or pushed at least once), summed over shards. *Bytes / row*: "
        "everything the shards' stores hold (row arena with the two Adam moments, id index) "
        "over the rows held. Peak resident memory is each process's own `ru_maxrss` (torch "
        "included, about 0.3 GB for a bare worker), as `heterps run` reports it: ranks 0 "
        "and 1 are the two stages, the rest parameter-server shards. The coordinator (this "
        "benchmark process) is not counted.\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


# --- speed -----------------------------------------------------------------------------------


def _plain(train: TrainSettings, threads: int = 2) -> float:
    return train_plain(train, threads=threads).throughput


def bench_speed(steps: int, repeats: int) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    cases = [
        # (label, model, size of our runs, plain loop's model and size, its label)
        ("small", "ctr_dnn", "small", ("ctr_dnn", "small"), "same"),
        ("production", "ctr_dnn", "production", (scaled("1M"), "small"),
         "1M rows per field (production's 60M cannot be held by a plain loop here)"),
    ]
    lines = [
        "| size | (a) plain loop, 2 threads | (a1) plain loop, 1 thread | (b) 2 stages, async "
        "| (b)/(a) | (c) 2 replicas + 1 shard, async | (c)/(a) | plain loop's tables |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, model, size, (plain_model, plain_size), plain_note in cases:
        best = {"a": 0.0, "a1": 0.0, "b": 0.0, "c": 0.0}
        for _ in range(repeats):
            plain = _train(plain_model, plain_size, steps)
            best["a"] = max(best["a"], _plain(plain))
            best["a1"] = max(best["a1"], _plain(plain, threads=1))
            ours = _train(model, size, steps)
            best["b"] = max(best["b"], _run(ours, TWO_STAGES, 1).throughput)
            best["c"] = max(best["c"], _run(ours, DATA_PARALLEL, 1).throughput)
            print(label, best, flush=True)
        lines.append(
            f"| {label} | {best['a']:,.0f} | {best['a1']:,.0f} | {best['b']:,.0f} "
            f"| {best['b'] / best['a']:.2f} "
            f"| {best['c']:,.0f} | {best['c'] / best['a']:.2f} | {plain_note} |"
        )
    head = (
        "## Speed: our runtime vs a plain PyTorch loop\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py speed --steps {steps} "
        f"--repeats {repeats}`; load average at start {load}, at end {_load()}. **The machine "
        "(2 cores) was shared with other engineers' test runs during this measurement**, so "
        "absolute numbers and ratios carry that noise (alternated runs, best of "
        f"{repeats}).\n\n"
        "Samples/s after the first mini-batch (process start-up excluded), CTR-DNN, batch "
        "1,000, Adam (lr 0.001) on the dense layers and sparse Adam (lr 0.001) on the tables "
        "everywhere. (a): one process, 2 threads, `nn.Embedding(sparse=True)` + "
        "`torch.optim.SparseAdam`, MLP with `torch.optim.Adam` (`reference.train_plain`). "
        "(b): embedding stage + dense stage, one thread each, async, one parameter-server "
        "shard (3 processes on the 2 cores). (c): one stage with 2 replicas (all-reduced "
        "dense layers) + one shard, async sparse updates (ASP on the tables). (a1): (a) with "
        "one thread, shown because on an oversubscribed machine two OpenMP threads wait on "
        "each other (here (a) can be far slower than (a1)), while our several processes "
        "get more of the shared cores than one process: read the ratios with the load "
        "average in mind.\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


# --- scale -----------------------------------------------------------------------------------


def bench_scale(steps: int) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    lines = ["| rows per field (logical) | ms per mini-batch, (b) 2 stages async | rows held "
             "| peak resident GB, all processes |", "|---:|---:|---:|---:|"]
    for label in SCALED:
        result = _run(_train(scaled(label), "small", steps), TWO_STAGES, 1)
        rows = sum(int(s.get("rows_held", 0)) for s in result.process_stats.values())
        total = sum(s["peak_rss_bytes"] for s in result.process_stats.values()) / 1e9
        lines.append(f"| {label} | {1000 * 1000 / result.throughput:.1f} | {rows:,} "
                     f"| {total:.2f} |")
        print(lines[-1], flush=True)
    head = (
        "## Scale: vocabulary size costs neither memory nor time\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py scale --steps {steps}`; "
        f"load average at start {load}, at end {_load()} (shared machine).\n\n"
        "Plan (b) of the speed table, CTR-DNN layers with 26 fields of the given rows each, "
        f"{steps} mini-batches of 1,000.\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


# --- hot-row cache ---------------------------------------------------------------------------


def bench_cache(steps: int, repeats: int, rows: int, staleness: int) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    lines = [
        "| size | cache | samples/s (best of "
        f"{repeats}) | rows pulled per mini-batch | loss, mean of the last 20 |",
        "|---|---|---:|---:|---:|",
    ]
    for size in ("small", "production"):
        settings = {"off": _train("ctr_dnn", size, steps),
                    f"{rows:,} rows, staleness {staleness}": replace(
                        _train("ctr_dnn", size, steps), cache_rows=rows,
                        cache_staleness=staleness)}
        best: dict[str, RunResult] = {}
        for _ in range(repeats):  # alternated
            for label, train in settings.items():
                result = _run(train, TWO_STAGES, 1)
                if label not in best or result.throughput > best[label].throughput:
                    best[label] = result
        for label, result in best.items():
            pulled = sum(int(s.get("rows_pulled", 0)) for s in result.process_stats.values())
            tail = result.losses[-20:]
            lines.append(f"| {size} | {label} | {result.throughput:,.0f} "
                         f"| {pulled / steps:,.0f} | {sum(tail) / len(tail):.4f} |")
            print(lines[-1], flush=True)
    head = (
        "## Hot-row cache: (b) with and without it\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py cache --steps {steps} "
        f"--repeats {repeats} --rows {rows} --staleness {staleness}`; load average at start "
        f"{load}, at end {_load()} (shared machine).\n\n"
        "(b) of the speed table (async, one shard), CTR-DNN, mini-batches of 1,000, without "
        "and with the stages' hot-row cache (docs/runtime.md): rows per table kept, rounds a "
        "cached row is read after its pull. *Rows pulled* counts the rows the shard sent "
        "(all tables). The cache changes what the rows read are (up to the staleness bound "
        "old), so the losses differ.\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


# --- profile ---------------------------------------------------------------------------------

# Frames every training sample of a process passes through (they say nothing).
_WRAPPERS = ("_run_module_as_main", "_run_code", "<module>", "main", "run_rank", "_serve",
             "StageWorker.run", "ParameterServer.serve", "_exception_logger.<locals>.wrapper",
             "Module._wrapped_call_impl", "Module._call_impl")
_ROLES = {0: "stage 1 (embedding, PS client)", 1: "stage 2 (dense)", 2: "PS shard"}


def _profiled_run(steps: int, out: str) -> None:
    """(b) of the speed table, CTR-DNN `small`: what `profile` runs under py-spy."""
    result = _run(_train("ctr_dnn", "small", steps), TWO_STAGES, 1)
    span = (steps - 1) * 1000 / result.throughput  # first to last finished mini-batch
    Path(out).write_text(json.dumps({"throughput": result.throughput, "span_s": span}))


def _frame(text: str) -> str:
    return text.split(" (", 1)[0]


def _analyse(raw: Path, rate: int) -> dict[int, dict[str, Any]]:
    """Per rank: training samples, self and inclusive counts per frame (py-spy raw format:
    `process A;process B:"cmd";frame;...;frame COUNT`, start-up samples dropped)."""
    out: dict[int, dict[str, Any]] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        last = max(i for i, f in enumerate(frames) if f.startswith("process "))
        found = re.search(r"--rank (\d+)", frames[last])
        body = [_frame(f) for f in frames[last + 1:]]
        if found is None or not {"StageWorker.run", "ParameterServer.serve"} & set(body):
            continue
        rank = out.setdefault(int(found.group(1)), {"n": 0, "self": Counter(), "incl": Counter()})
        n = int(count)
        rank["n"] += n
        rank["self"][body[-1]] += n
        for frame in set(body) - set(_WRAPPERS):
            rank["incl"][frame] += n
    for rank in out.values():
        rank["cpu_s"] = rank["n"] / rate
    return out


def bench_profile(steps: int, label: str, rate: int) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    with tempfile.TemporaryDirectory(prefix="h-ps-profile-") as tmp:
        raw, result = Path(tmp) / "raw.txt", Path(tmp) / "result.json"
        spy = Path(sys.executable).with_name("py-spy")
        subprocess.run(
            [str(spy), "record", "--subprocesses", "--format", "raw", "--rate", str(rate),
             "-o", str(raw), "--", sys.executable, __file__, "_profiled", "--steps", str(steps),
             "--out", str(result)],
            check=True,
        )
        ranks = _analyse(raw, rate)
        ran = json.loads(result.read_text())
    span = ran["span_s"]
    lines = [
        "| process | CPU s in training | busy share of the span | top frames, inclusive "
        "(share of the process's training samples) | top frames, self |",
        "|---|---:|---:|---|---|",
    ]
    for rank in sorted(ranks):
        info = ranks[rank]
        incl = "; ".join(f"{f} {100 * c / info['n']:.0f}%" for f, c in info["incl"].most_common(9))
        own = "; ".join(f"{f} {100 * c / info['n']:.0f}%" for f, c in info["self"].most_common(6))
        lines.append(f"| rank {rank}: {_ROLES.get(rank, '?')} | {info['cpu_s']:.1f} "
                     f"| {100 * info['cpu_s'] / span:.0f}% | {incl} | {own} |")
    head = (
        f"## Profile ({label}): where the time of (b) goes\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py profile --steps "
        f"{steps} --label {label} --rate {rate}` (py-spy {_spy_version()} `record "
        f"--subprocesses`, {rate} samples/s per process, active threads only: waits that "
        "sleep are not sampled); load average at start "
        f"{load}, at end {_load()}.\n\n"
        f"(b) of the speed table at `small`: {steps} mini-batches of 1,000, "
        f"{ran['throughput']:,.0f} samples/s under the profiler (span {span:.1f} s from the "
        "first to the last finished mini-batch). Samples of start-up (imports, model build, "
        "process group) are left out: only those inside a stage's `run` or a shard's "
        "`serve`. A frame's share counts the samples with it on the stack (children "
        "included); *self* counts the innermost Python frame (torch's C++ work is "
        "attributed to the Python call that made it: `isend` includes gloo's enqueue and "
        "any socket write it does in the caller's thread).\n"
    )
    return head + "\n" + "\n".join(lines) + "\n"


def _spy_version() -> str:
    spy = Path(sys.executable).with_name("py-spy")
    done = subprocess.run([str(spy), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.split()[-1]


# --- messages: one shard's pull and push per mini-batch ---------------------------------------

SPY_RATE = 250


def _traffic(messages: int, dim: int, seed: int = 0) -> list[list[tuple[int, torch.Tensor,
                                                                        torch.Tensor]]]:
    """Per mini-batch of CTR-DNN `small` (batch 1,000): (table, distinct ids, gradient rows)."""
    from heterps_core.zoo.data import indexed_batches

    model = CtrDnn()
    config = model.config("small")
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _, (inputs, _) in zip(range(messages), indexed_batches(model, config, 1000),
                              strict=False):
        sparse = inputs["sparse"]
        ids = [sparse[:, t].unique() for t in range(sparse.shape[1])]
        out.append([(t, i, torch.randn(i.numel(), dim, generator=gen) * 1e-2)
                    for t, i in enumerate(ids)])
    return out


def _serve_messages(shard: Any, traffic: list[Any]) -> tuple[list[float], list[float]]:
    """What a shard's server does per mini-batch: answer the pull (one flat reply), apply
    the push. Uses the one-pass calls where the code has them, else the tables one by one
    (what the server did before them)."""
    many = hasattr(shard, "pull_many")
    pulls, pushes = [], []
    for parts in traffic:
        asked = [(t, ids) for t, ids, _ in parts]
        t0 = time.perf_counter()
        if many:
            shard.pull_many(asked)
        else:
            torch.cat([shard.pull(t, ids).reshape(-1) for t, ids in asked])
        t1 = time.perf_counter()
        if many:
            shard.push_many(0, parts)
        else:
            for t, ids, grads in parts:
                shard.push(t, 0, ids, grads)
        pulls.append(t1 - t0)
        pushes.append(time.perf_counter() - t1)
    return pulls, pushes


def _messages_run(optimizer: str, messages: int, warmup: int, out: str) -> None:
    """One process, one tree (`HETERPS_BENCH_CODE`): time per message of each kind."""
    from heterps_core.ps.shard import Shard, TableSpec

    torch.set_num_threads(1)
    dim = CtrDnn().config("small").embedding_dim
    traffic = _traffic(warmup + messages, dim)
    shard = Shard([TableSpec(dim, RowInit("normal", 0.01, seed=t), get(optimizer)())
                   for t in range(N_SPARSE)], synchronous=False)
    _serve_messages(shard, traffic[:warmup])  # rows of the hot head exist, as in a run
    pulls, pushes = _serve_messages(shard, traffic[warmup:])
    rows = sum(ids.numel() for parts in traffic[warmup:] for _, ids, _ in parts) / messages
    Path(out).write_text(json.dumps({"pull": pulls, "push": pushes, "rows": rows,
                                     "held": sum(shard.rows())}))


def _one(code: Path, optimizer: str, messages: int, warmup: int, spy: Path | None = None
         ) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="h-ps-msg-") as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, __file__, "_messages", "--optimizer", optimizer, "--messages",
               str(messages), "--warmup", str(warmup), "--out", str(out)]
        if spy is not None:
            cmd = [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw",
                   "--rate", str(SPY_RATE), "-o", str(spy), "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env={**os.environ, "HETERPS_BENCH_CODE": str(code)})
        # py-spy 0.4 exits 1 ("No child process") after its child ended and the profile was
        # written: the run's own output says whether it finished.
        if not out.exists() or (spy is not None and not spy.exists()):
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
        return json.loads(out.read_text())


def _spy_shares(raw: Path) -> tuple[float, Counter[str], Counter[str]]:
    """Samples in the timed loop (`_serve_messages`), with inclusive and self counts per
    frame below it."""
    incl: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_frame(f) for f in stack.split(";")]
        if "_serve_messages" not in frames:
            continue
        body = frames[frames.index("_serve_messages") + 1:]
        n = int(count)
        total += n
        own[body[-1] if body else "_serve_messages"] += n
        for frame in set(body):
            incl[frame] += n
    return total, incl, own


def bench_messages(old: Path | None, rounds: int, messages: int, warmup: int, spy: bool,
                   old_is: str) -> str:
    started = dt.datetime.now(dt.UTC)
    load = _load()
    trees = {"new": ROOT} if old is None else {"old": old, "new": ROOT}
    optimizers = ("sgd", "adagrad", "adam")
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(rounds):
        for optimizer in optimizers:
            order = list(trees) if r % 2 == 0 else list(reversed(trees))  # alternated
            for label in order:
                got.setdefault((label, optimizer), []).append(
                    _one(trees[label], optimizer, messages, warmup))
            print(f"round {r + 1}/{rounds} {optimizer} done, load {_load()}", flush=True)

    def ms(run: dict[str, Any], kind: str) -> float:
        return 1e3 * float(np.median(run[kind]))

    lines = ["| optimizer | code | pull ms / message | push ms / message | pull+push "
             "| old / new (paired rounds) |", "|---|---|---:|---:|---:|---|"]
    for optimizer in optimizers:
        for label in trees:
            runs = got[(label, optimizer)]
            pull = min(ms(x, "pull") for x in runs)
            push = min(ms(x, "push") for x in runs)
            ratio = ""
            if label == "new" and old is not None:
                pairs = zip(got[("old", optimizer)], runs, strict=True)
                ratios = [(ms(a, "pull") + ms(a, "push")) / (ms(b, "pull") + ms(b, "push"))
                          for a, b in pairs]
                ratio = ", ".join(f"{x:.2f}x" for x in ratios)
            lines.append(f"| {optimizer} | {label} | {pull:.2f} | {push:.2f} "
                         f"| {pull + push:.2f} | {ratio} |")
    rows = got[("new", "adam")][0]["rows"]
    text = (
        "## Messages: one shard's pull and push per mini-batch\n\n"
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `python bench/ps.py messages"
        f"{f' --old {old} --old-is {shlex.quote(old_is)}' if old else ''} --rounds {rounds}"
        f" --messages {messages}"
        f"{' --spy' if spy else ''}`; load average at start {load}, at end {_load()} (2 cores "
        "shared with other engineers' work: read the paired ratios, not the times).\n\n"
        f"A shard holding CTR-DNN `small`'s 26 tables (dim 10), async, one thread, serves "
        f"the messages of {messages} mini-batches of 1,000 (after {warmup} that create the "
        f"hot rows): per mini-batch a pull of every table's distinct ids ({rows:,.0f} rows in "
        "all, one flat reply) and a push of a gradient row for each (one optimiser update of "
        "every table), as its server calls it. Median time per message over the mini-batches "
        f"of a run, best of {rounds} runs; one process per run, the trees alternated. *old*: "
        f"{old_is}; *new*: this tree's `Shard.pull_many` / `push_many`. Old / new: (old "
        "pull+push) / (new pull+push) of each round.\n\n" + "\n".join(lines) + "\n"
    )
    if spy:
        text += _messages_profile(trees, messages, warmup)
    return text


def _messages_profile(trees: dict[str, Path], messages: int, warmup: int) -> str:
    lines = ["\n| code (Adam) | samples in the timed loop | inclusive (share) | self (share) |",
             "|---|---:|---|---|"]
    for label, code in trees.items():
        with tempfile.TemporaryDirectory(prefix="h-ps-spy-") as tmp:
            raw = Path(tmp) / "raw.txt"
            _one(code, "adam", messages, warmup, spy=raw)
            total, incl, own = _spy_shares(raw)
        top = "; ".join(f"{f} {100 * c / total:.0f}%" for f, c in incl.most_common(12))
        mine = "; ".join(f"{f} {100 * c / total:.0f}%" for f, c in own.most_common(8))
        lines.append(f"| {label} | {total:,} | {top} | {mine} |")
    return (f"\npy-spy {_spy_version()} (`record --format raw --rate {SPY_RATE}`), the Adam "
            "run of each tree: the samples inside the timed loop, the frames below it "
            "(inclusive: on the stack; self: innermost Python frame, torch's and numpy's C "
            "code counted in the call that made it).\n" + "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    store = sub.add_parser("store", help="the shard store alone")
    store.add_argument("--rows", default="1000000,5000000,20000000")
    store.add_argument("--batch", type=int, default=26_000)
    store.add_argument("--dim", type=int, default=10)
    memory = sub.add_parser("memory", help="CTR-DNN production: rows, bytes, peak memory")
    memory.add_argument("--steps", type=int, default=3000)
    memory.add_argument("--shards", default="1,2")
    speed = sub.add_parser("speed", help="vs a plain PyTorch loop")
    speed.add_argument("--steps", type=int, default=200)
    speed.add_argument("--repeats", type=int, default=3)
    scale = sub.add_parser("scale", help="time per mini-batch vs rows per field")
    scale.add_argument("--steps", type=int, default=100)
    cache = sub.add_parser("cache", help="(b) with and without the hot-row cache")
    cache.add_argument("--steps", type=int, default=200)
    cache.add_argument("--repeats", type=int, default=2)
    cache.add_argument("--rows", type=int, default=100_000)
    cache.add_argument("--staleness", type=int, default=2)
    prof = sub.add_parser("profile", help="py-spy profile of (b), CTR-DNN small")
    prof.add_argument("--steps", type=int, default=600)
    prof.add_argument("--label", default="before")
    prof.add_argument("--rate", type=int, default=100)
    msgs = sub.add_parser("messages", help="one shard's time per pull and push message")
    msgs.add_argument("--old", type=Path, default=None)
    msgs.add_argument("--old-is", default="the checkout `--old` names",
                      help="what the old tree is, for the report")
    msgs.add_argument("--rounds", type=int, default=3)
    msgs.add_argument("--messages", type=int, default=200)
    msgs.add_argument("--warmup", type=int, default=100)
    msgs.add_argument("--spy", action="store_true")
    one = sub.add_parser("_messages")  # one run of `messages`, in the tree HETERPS_BENCH_CODE
    one.add_argument("--optimizer", required=True)
    one.add_argument("--messages", type=int, required=True)
    one.add_argument("--warmup", type=int, required=True)
    one.add_argument("--out", required=True)
    inner = sub.add_parser("_profiled")  # what `profile` runs under py-spy
    inner.add_argument("--steps", type=int, required=True)
    inner.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.part == "_profiled":
        _profiled_run(args.steps, args.out)
        return
    if args.part == "_messages":
        _messages_run(args.optimizer, args.messages, args.warmup, args.out)
        return
    if args.part == "messages":
        write_section("messages", bench_messages(args.old, args.rounds, args.messages,
                                                 args.warmup, args.spy, args.old_is))
        print(f"wrote {DOC}")
        return
    if args.part == "cache":
        write_section("cache", bench_cache(args.steps, args.repeats, args.rows, args.staleness))
        print(f"wrote {DOC}")
        return
    if args.part == "profile":
        write_section(f"profile-{args.label}", bench_profile(args.steps, args.label, args.rate))
        print(f"wrote {DOC}")
        return
    if args.part == "store":
        sizes = [int(float(s)) for s in args.rows.split(",")]
        write_section("store", bench_store(sizes, args.batch, args.dim))
    elif args.part == "memory":
        shards = [int(s) for s in args.shards.split(",")]
        write_section("memory", bench_memory(args.steps, shards))
    elif args.part == "speed":
        write_section("speed", bench_speed(args.steps, args.repeats))
    else:
        write_section("scale", bench_scale(args.steps))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
