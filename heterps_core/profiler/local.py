"""Resource types for *this* machine (`heterps profile ... --include-local N`).

So that the cost model can be checked against real runs here, `local-1..local-N` are N
identical resource types measured on this machine the way the runtime runs a stage: per
layer forward + backward + the dense optimiser's step on one batch, with `threads` torch
threads, the first layer also paying for producing the batch (the runtime's first stage
reads/generates data), and sparse layers through the remote-table path with a real
parameter-server shard in this process (a stage holds no table). The median of `repeats`
batches: a run's throughput is its sustained rate, which the fastest batch overstates (by
4-5% on ctr_dnn on a quiet machine here). The shard's own time per row it serves is the
types' `row_s` (server_probe.py).
Network: the one-way bandwidth of a gloo ping-pong of the largest boundary activation
between two processes here (loopback.py). Count: cores / threads; price 1.00 + 0.01 i per
hour (distinct, so that plans are repeatable).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from heterps_core.profiler.measure import CpuUse, current_precision, median_spread, usable_threads
from heterps_core.profiler.server_probe import ServerProbe
from heterps_core.provenance import this_host


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
    # The machine it was measured on: built right after measuring, so this one.
    host: str = field(default_factory=this_host)

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
    from heterps_core.ps.optim import create, parse
    from heterps_core.runtime.models import resolve_model

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        zoo = resolve_model(model_name)
        config = zoo.config(size)
        model = zoo.build(config, seed=seed)
        batches = zoo.batches(config, batch_size, seed=seed)
        layers = model.chain
        server = ServerProbe(model, parse(f"{optimizer}:lr={lr}")) if with_server else None
        dense = create(optimizer, lr=lr)
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


def _boundary_mb(model: Any, context: dict[str, torch.Tensor], i: int) -> float:
    """MB crossing a cut after layer i (the output after the last), zoo/base.py."""
    if i == len(model.layers) - 1:
        names = [model.output]
    else:
        names = [name for name, _ in model.boundary(i)]
    return sum(context[n].numel() * context[n].element_size() for n in names) / 1e6
