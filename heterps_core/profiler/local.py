"""Resource types for *this* machine (`heterps profile ... --include-local N`).

So that the cost model can be checked against real runs here, `local-1..local-N` are N
identical resource types measured on this machine the way the runtime runs a stage: per
layer forward + backward + its SGD update on one batch, with `threads` torch threads, the
first layer also paying for producing the batch (the runtime's first stage reads/generates
data), fastest of `repeats` batches (other work on a shared machine only ever adds time).
Network: the one-way bandwidth of a gloo ping-pong of the largest boundary activation
between two processes here. Count: cores / threads; price 1.00 + 0.01 i per hour (distinct,
so that plans are repeatable).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class LocalMeasure:
    seconds: tuple[float, ...]  # per layer
    network_gbps: float
    threads: int
    measured_at: str

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


def runtime_step_seconds(
    model_name: str, size: str, batch_size: int, threads: int, repeats: int, seed: int = 0,
    lr: float = 0.05,
) -> tuple[list[float], list[float]]:
    """(seconds per layer, output MB per layer) as the runtime's stages spend them."""
    from heterps_core.runtime.models import resolve_model

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        zoo = resolve_model(model_name)
        config = zoo.config(size)
        model = zoo.build(config, seed=seed)
        batches = zoo.batches(config, batch_size, seed=seed)
        layers = list(model.layers)
        times: list[list[float]] = [[] for _ in layers]
        outputs = [0.0] * len(layers)
        for _ in range(repeats + 2):  # two warm-up batches
            t_data = time.perf_counter()
            inputs, labels = next(batches)
            data_s = time.perf_counter() - t_data
            x: object = inputs
            for i, layer in enumerate(layers):
                if isinstance(x, torch.Tensor):
                    x = x.detach().requires_grad_(True)
                params = list(layer.parameters())
                optimizer = torch.optim.SGD(params, lr=lr) if params else None
                t0 = time.perf_counter()
                y = layer(x)
                if i == len(layers) - 1:
                    model.loss(y, labels).backward()
                else:
                    y.backward(torch.ones_like(y) / y.numel())
                if optimizer is not None:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                times[i].append(time.perf_counter() - t0 + (data_s if i == 0 else 0.0))
                outputs[i] = y.numel() * y.element_size() / 1e6
                x = y
        return [min(t[2:]) for t in times], outputs
    finally:
        torch.set_num_threads(previous)


def _ping(rank: int, port: int, floats: int, rounds: int, result: Any) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    buffer = torch.zeros(floats)
    times = []
    for _ in range(rounds + 3):
        t0 = time.perf_counter()
        if rank == 0:
            dist.send(buffer, 1)
            dist.recv(buffer, 1)
        else:
            dist.recv(buffer, 0)
            dist.send(buffer, 0)
        times.append(time.perf_counter() - t0)
    if rank == 0:
        result.value = sorted(times[3:])[rounds // 2]
    dist.destroy_process_group()


def loopback_gbps(megabytes: float, rounds: int = 50) -> float:
    """One-way Gbit/s of a gloo message of this size between two local processes (the
    median round trip carries it twice)."""
    import torch.multiprocessing as mp

    result = mp.get_context("spawn").Value("d", 0.0)
    with socket.socket() as probe:  # a free port for the pair's rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(_ping, args=(port, max(1, int(megabytes * 1e6 / 4)), rounds, result), nprocs=2)
    return 2 * max(megabytes, 4e-6) * 1e6 * 8 / result.value / 1e9
