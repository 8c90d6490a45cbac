"""Resource types for *this* machine (`heterps profile ... --include-local N`).

So that the cost model can be checked against real runs here, `local-1..local-N` are N
identical resource types measured on this machine the way the runtime runs a stage: per
layer forward + backward + the dense optimiser's step on one batch, with `threads` torch
threads, the first layer also paying for producing the batch (the runtime's first stage
reads/generates data), and sparse layers through the remote-table path with a real
parameter-server shard in this process (a stage holds no table). The median of `repeats`
batches: a run's throughput is its sustained rate, which the fastest batch overstates (by
4-5% on ctr_dnn on a quiet machine here). The shard's own time per row it serves is the
types' `row_s`.
Network: the one-way bandwidth of a gloo ping-pong of the largest boundary activation
between two processes here. Count: cores / threads; price 1.00 + 0.01 i per hour (distinct,
so that plans are repeatable).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from heterps_core.profiler.measure import CpuUse, current_precision, median_spread, usable_threads


@dataclass(frozen=True)
class LocalMeasure:
    seconds: tuple[float, ...]  # per layer
    network_gbps: float
    threads: int
    measured_at: str
    rows: tuple[float, ...] = ()  # distinct sparse rows per batch, per layer
    row_s: float = 0.0  # the server's seconds per row (StepTimes.row_s)
    spreads: tuple[float | None, ...] = ()  # per layer: the median's relative 95% half-width
    cpu_use: CpuUse | None = None  # the process's CPU time against the cores' while timing
    repeats: int = 0  # mini-batches timed
    network_spread: float | None = None  # the loopback's median round trip's (Link.spread)
    row_s_spread: float | None = None  # StepTimes.row_s_spread

    @property
    def under_load(self) -> bool:
        return self.cpu_use is not None and self.cpu_use.under_load

    def resources(self, n: int, memory_gb: float) -> list[dict[str, Any]]:
        count = max(1, (os.cpu_count() or 1) // self.threads)
        return [
            {"name": f"local-{i}", "kind": "cpu", "price_per_hour": round(1.0 + 0.01 * i, 2),
             "count": count, "memory_gb": memory_gb, "network_gbps": self.network_gbps}
            for i in range(1, n + 1)
        ]


def memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError):  # not POSIX: a modest default
        return 8.0


# Mini-batches the server's row time is averaged over (the length of a short check run).
SERVER_BATCHES = 100


@dataclass(frozen=True)
class StepTimes:
    """One stage's work per mini-batch on this machine, layer by layer, as the runtime does it.

    `seconds`: the stage's own time per layer (with a server: the remote-table path, without
    the server's part); `rows`: distinct sparse rows a mini-batch pulls per layer; `row_s`:
    the server's seconds per such row (gather, create first-touched rows, apply the pushed
    gradient with the table's optimiser).
    """

    seconds: tuple[float, ...]
    outputs_mb: tuple[float, ...]
    rows: tuple[float, ...]
    row_s: float
    spreads: tuple[float | None, ...] = ()  # per layer: the median's relative 95% half-width
    cpu_use: CpuUse | None = None  # over the timed mini-batches
    repeats: int = 0  # mini-batches timed (more than asked under `repeat_until_known`)
    # row_s is a mean over a run's length (see SERVER_BATCHES), not a median: its spread is
    # the mean's 95% half-width over the mini-batches' own row times, relative.
    row_s_spread: float | None = None


def runtime_step_seconds(
    model_name: str, size: str, batch_size: int, threads: int, repeats: int, seed: int = 0,
    lr: float = 0.05,
) -> tuple[list[float], list[float]]:
    """(seconds per layer, output MB per layer) of stages that hold their tables (SGD,
    fastest of `repeats`): the figures of bench/runtime.py."""
    steps = runtime_steps(model_name, size, batch_size, threads, repeats, seed, lr,
                          optimizer="sgd", with_server=False, statistic=min)
    return list(steps.seconds), list(steps.outputs_mb)


def runtime_steps(
    model_name: str, size: str, batch_size: int, threads: int, repeats: int, seed: int = 0,
    lr: float = 0.05, optimizer: str = "sgd", with_server: bool = True,
    statistic: Callable[[list[float]], float] = statistics.median,
) -> StepTimes:
    """Per layer forward + backward + the dense optimiser's step, the first layer also
    producing the batch; with a server, sparse layers through the runtime's remote-table path
    (collect the ids, pull the distinct rows from a real shard in this process, look up,
    push one gradient row per distinct row), the shard's time kept apart as `row_s`.
    `repeats` mini-batches are timed, more under `measure.repeat_until_known` (until every
    layer's median is known within the target, or the cap)."""
    from heterps_core.ps.optim import get, parse
    from heterps_core.runtime.models import resolve_model

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        zoo = resolve_model(model_name)
        config = zoo.config(size)
        model = zoo.build(config, seed=seed)
        batches = zoo.batches(config, batch_size, seed=seed)
        layers = model.chain
        server = _ServerProbe(model, parse(f"{optimizer}:lr={lr}")) if with_server else None
        dense = get(optimizer, lr=lr)
        params = [list(layer.parameters()) for layer in layers]
        optimizers = [dense.torch_dense(p) if p else None for p in params]
        times: list[list[float]] = [[] for _ in layers]
        rows = [0.0] * len(layers)
        per_row: list[tuple[float, float]] = []  # (server seconds, rows) per mini-batch
        outputs = [0.0] * len(layers)
        precision = current_precision(repeats)
        use = CpuUse(0.0, 0.0, 0.0)
        cores = usable_threads()
        step = 0
        while not all(precision.done(t[2:], repeats) for t in times):  # two warm-up batches
            wall0, cpu0 = time.perf_counter(), time.process_time()
            t_data = time.perf_counter()
            inputs, labels = next(batches)
            data_s = time.perf_counter() - t_data
            context: dict[str, torch.Tensor] = dict(inputs)
            served = served_rows = 0.0
            for i, layer in enumerate(layers):
                if i > 0:  # each layer on its own, as after a cut (zoo/base.py: the context)
                    context = {name: value.detach().requires_grad_(value.is_floating_point())
                               for name, value in context.items()}
                t0 = time.perf_counter()
                pulled = server.pull(i, layer, context) if server is not None else None
                written = layer.run(context)
                if i == len(layers) - 1:
                    model.loss(written[model.output], labels).backward()
                else:
                    ys = list(written.values())
                    torch.autograd.backward(ys, [torch.ones_like(y) / y.numel() for y in ys])
                if server is not None and pulled is not None:
                    server.push(i, step, pulled)
                step_of = optimizers[i]
                if step_of is not None:
                    step_of.step()
                    step_of.zero_grad(set_to_none=True)
                layer_server_s = server.take_seconds() if server is not None else 0.0
                served += layer_server_s
                times[i].append(time.perf_counter() - t0 - layer_server_s
                                + (data_s if i == 0 else 0.0))
                if pulled is not None:
                    n_rows = float(sum(r.ids.numel() for r in pulled))
                    served_rows += n_rows
                    if step >= 2:
                        rows[i] += n_rows
                context.update(written)
                outputs[i] = _boundary_mb(model, context, i)
            if served_rows:
                per_row.append((served, served_rows))
            if step >= 2:
                wall = time.perf_counter() - wall0
                use = use + CpuUse(time.process_time() - cpu0, wall, wall * cores)
            step += 1
        timed = step - 2
        if server is not None and min(server.by_layer, default=None) == 0:
            # The server's side alone for the rest of SERVER_BATCHES mini-batches: the share
            # of rows touched for the first time (dearer: created, then updated) falls as a
            # run goes on, so row_s is the mean over a run of that length, warm-up included.
            for later in range(step, SERVER_BATCHES):
                inputs, _ = next(batches)
                per_row.append(server.serve_only(inputs, layers, later))
        served_s = sum(seconds for seconds, _ in per_row)
        served_n = sum(n for _, n in per_row)
        return StepTimes(
            tuple(statistic(t[2:]) for t in times), tuple(outputs),
            tuple(r / timed for r in rows), served_s / served_n if served_n else 0.0,
            tuple(median_spread(sorted(t[2:])) for t in times), use, timed,
            _mean_spread([seconds / n for seconds, n in per_row if n]),
        )
    finally:
        torch.set_num_threads(previous)


def _mean_spread(samples: list[float]) -> float | None:
    """The relative 95% half-width of the mean of `samples` (normal approximation)."""
    if len(samples) < 2 or statistics.fmean(samples) <= 0:
        return None
    return 1.96 * statistics.stdev(samples) / len(samples) ** 0.5 / statistics.fmean(samples)


class _ServerProbe:
    """A parameter-server shard in this process and the remote tables that read from it:
    what a stage and its server do per mini-batch, without the transport."""

    def __init__(self, model: Any, optimizer: Any) -> None:
        from heterps_core.ps.remote import replace_table
        from heterps_core.ps.shard import Shard, TableSpec
        from heterps_core.runtime.ps import first_rows
        from heterps_core.runtime.tables import sparse_tables

        refs = sparse_tables(model)
        self.shard = Shard([TableSpec(int(ref.weight.shape[1]), first_rows(ref), optimizer)
                            for ref in refs], synchronous=True)
        self.by_layer: dict[int, list[Any]] = {}
        for ref in refs:
            remote = replace_table(model.layers[ref.layer], ref.path, ref.table, self._fetch)
            self.by_layer.setdefault(ref.layer, []).append(remote)
        self._seconds = 0.0

    def _fetch(self, table: int, ids: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(f"table {table}: a lookup outside the rows pulled for the batch")

    def pull(self, layer_index: int, layer: Any, x: object) -> list[Any] | None:
        from heterps_core.ps.remote import BatchRows, collect_ids

        remotes = self.by_layer.get(layer_index)
        if not remotes:
            return None
        distinct = [BatchRows.of(ids) for ids in collect_ids(remotes, lambda: layer.run(x))]
        t0 = time.perf_counter()
        values = [self.shard.pull(r.table, ids) for r, (ids, _) in zip(remotes, distinct,
                                                                        strict=True)]
        self._seconds += time.perf_counter() - t0
        rows = [BatchRows(ids, v, inverse) for (ids, inverse), v in zip(distinct, values,
                                                                        strict=True)]
        for remote, batch_rows in zip(remotes, rows, strict=True):
            remote.begin(batch_rows)
        return rows

    def push(self, layer_index: int, step: int, rows: list[Any]) -> None:
        grads = [r.gradient().detach() for r in rows]
        t0 = time.perf_counter()
        for remote, r, grad in zip(self.by_layer[layer_index], rows, grads, strict=True):
            self.shard.push(remote.table, step, r.ids, grad)
        self._seconds += time.perf_counter() - t0

    def serve_only(self, inputs: object, layers: list[Any], step: int) -> tuple[float, float]:
        """One mini-batch's pulls and pushes (zero gradients) of layer 0's tables (they read
        the batch itself), no compute: (server seconds, rows)."""
        rows = self.pull(0, layers[0], inputs)
        assert rows is not None
        for r in rows:
            r.values.grad = torch.zeros_like(r.values)
        self.push(0, step, rows)
        return self.take_seconds(), float(sum(r.ids.numel() for r in rows))

    def take_seconds(self) -> float:
        seconds, self._seconds = self._seconds, 0.0
        return seconds


def _boundary_mb(model: Any, context: dict[str, torch.Tensor], i: int) -> float:
    """MB crossing a cut after layer i (the output after the last), zoo/base.py."""
    if i == len(model.layers) - 1:
        names = [model.output]
    else:
        names = [name for name, _ in model.boundary(i)]
    return sum(context[n].numel() * context[n].element_size() for n in names) / 1e6


def _ping(rank: int, port: int, floats: int, rounds: int, target: float, cap: int) -> None:
    """Round trips in blocks of `rounds` until the median's spread is at most `target` or
    `cap` were timed (rank 0 decides and tells rank 1); rank 0 prints [median s, spread, n]
    as JSON (the process is `loopback`'s, started with `python -c`)."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    buffer = torch.zeros(floats)
    more = torch.ones(1)
    times: list[float] = []
    while more.item():
        for _ in range(rounds + (3 if not times else 0)):  # three warm-up trips at first
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(buffer, 1)
                dist.recv(buffer, 1)
            else:
                dist.recv(buffer, 0)
                dist.send(buffer, 0)
            times.append(time.perf_counter() - t0)
        if rank == 0:
            timed = sorted(times[3:])
            spread = median_spread(timed)
            known = spread is not None and spread <= target
            more[0] = 0.0 if known or len(timed) + rounds > cap else 1.0
            dist.send(more, 1)
        else:
            dist.recv(more, 0)
    if rank == 0:
        timed = sorted(times[3:])
        spread = median_spread(timed)
        print(json.dumps([statistics.median(timed), -1.0 if spread is None else spread,
                          len(timed)]), flush=True)
    dist.destroy_process_group()


@dataclass(frozen=True)
class Link:
    """The loopback's one-way bandwidth, the spread of its median round trip, and how many."""

    gbps: float
    spread: float | None
    rounds: int


def loopback(megabytes: float, rounds: int = 50) -> Link:
    """One-way Gbit/s of a gloo message of this size between two local processes (the
    median round trip carries it twice); under `measure.repeat_until_known`, more blocks of
    `rounds` until the median is known."""
    precision = current_precision(rounds)
    with socket.socket() as probe:  # a free port for the pair's rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cap = max(rounds, precision.max_repeats * 10)  # round trips are cheap: ten times the cap
    floats = max(1, int(megabytes * 1e6 / 4))
    # Two plain processes, not multiprocessing's spawn: a spawn leaves its resource tracker
    # running beside the caller (a web worker, a test session) for the caller's whole life.
    pair = [subprocess.Popen(
        [sys.executable, "-c", "from heterps_core.profiler.local import _ping; "
         f"_ping({rank}, {port}, {floats}, {rounds}, float('{precision.target}'), {cap})"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    outputs = [p.communicate(timeout=600) for p in pair]
    if any(p.returncode for p in pair):
        why = next(err for p, (_, err) in zip(pair, outputs, strict=True) if p.returncode)
        raise RuntimeError(f"the loopback measurement failed: {why.strip()[-500:]}")
    median, spread, n = json.loads(outputs[0][0].strip().splitlines()[-1])
    return Link(2 * max(megabytes, 4e-6) * 1e6 * 8 / median / 1e9,
                None if spread < 0 else spread, int(n))


def loopback_gbps(megabytes: float, rounds: int = 50) -> float:
    return loopback(megabytes, rounds).gbps
