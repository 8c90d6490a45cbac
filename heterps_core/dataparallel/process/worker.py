"""A worker process: its own replica, optimiser and shard; rounds as the server plans them.

Every round: ask the server for a plan (it answers once the sync mode lets this worker start,
with the entries that changed since its last pull), run the local steps, then push the update
(top-k compressed when the plan says so, with this worker's own error-feedback residual) or
all-reduce it with the other workers over gloo.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from dataclasses import replace
from datetime import timedelta
from multiprocessing.connection import Client, Connection

import torch
import torch.distributed as dist

from heterps_core import zoo
from heterps_core.dataparallel.compression import TopK, plain
from heterps_core.dataparallel.events import WorkerProfile
from heterps_core.dataparallel.job import shard_stream
from heterps_core.dataparallel.process.messages import (
    GO,
    STOP,
    Collective,
    Echo,
    Failed,
    PlanReply,
    Push,
    Ready,
    RoundRequest,
    Step,
    WorkerSpec,
    pack,
    unpack_into,
)
from heterps_core.dataparallel.profiling import profile_one, trimmed_mean
from heterps_core.dataparallel.worker import Worker
from heterps_core.rendezvous import connect

GLOO_TIMEOUT = timedelta(seconds=60)


class _Stopped(Exception):
    """The server said stop."""


def main(argv: list[str] | None = None) -> None:
    """`python -m heterps_core.dataparallel.process.worker HOST:PORT INDEX` (the server runs it)."""
    server, index = (argv if argv is not None else sys.argv[1:])[:2]
    host, _, port = server.rpartition(":")
    try:
        conn = Client((host, int(port)), authkey=bytes.fromhex(os.environ["HETERPS_DP_AUTHKEY"]))
        conn.send(int(index))
        spec = conn.recv()
    except (EOFError, OSError):
        os._exit(1)  # the server stopped the run before this worker joined; it says why
    torch.set_num_threads(1)  # one core per worker, as on a cluster
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    code = 0
    try:
        _WorkerProcess(spec, conn).run()
    except _Stopped:
        pass
    except Exception as exc:
        last = traceback.extract_tb(exc.__traceback__)[-1]
        text = f"{type(exc).__name__}: {exc} (at {os.path.basename(last.filename)}:{last.lineno})"
        with contextlib.suppress(OSError):
            conn.send(Failed(spec.index, text))
        code = 1
    # Skip interpreter teardown: gloo's destructor can block on peers that are already gone.
    os._exit(code)


class _WorkerProcess:
    def __init__(self, spec: WorkerSpec, conn: Connection) -> None:
        self.spec, self.conn, self.cfg = spec, conn, spec.config
        self.index = spec.index
        self.slowdown = self.cfg.slowdown(spec.index)
        zoo_model = zoo.get(spec.model_name)
        model = zoo_model.build(spec.model_config, seed=self.cfg.seed)
        stream = shard_stream(zoo_model, spec.model_config, self.cfg, 1 + spec.index)
        self.worker = Worker(spec.index, model, stream, self.cfg.batch_size, self.cfg.lr,
                             self.cfg.momentum)
        self.profile_stream = shard_stream(zoo_model, spec.model_config, self.cfg,
                                           500 + spec.index)
        self.server_view = self.worker.params()  # the server's vector as of the last pull
        self.topk: TopK | None = None

    def run(self) -> None:
        profile = self._profile() if self.spec.profile else None
        dist.init_process_group("gloo", store=connect(self.spec.store_address),
                                rank=self.index, world_size=self.cfg.workers,
                                timeout=GLOO_TIMEOUT)
        self.conn.send(Ready(self.index, profile))
        if self._recv() != GO:
            raise RuntimeError("expected the server's go")
        while True:
            self.conn.send(RoundRequest(self.index))
            plan = self._recv()
            assert isinstance(plan, PlanReply)
            self._round(plan)

    def _profile(self) -> WorkerProfile:
        measured = profile_one(self.worker, self.cfg, self.profile_stream)
        dense = pack(self.worker.params(), torch.ones(self.server_view.numel(), dtype=torch.bool))
        times = []
        for _ in range(self.cfg.profile_warmup + self.cfg.profile_rounds):
            start = time.perf_counter()
            self.conn.send(Echo(dense))
            self._recv()
            times.append(time.perf_counter() - start)
        return replace(measured, comm_s=trimmed_mean(times[self.cfg.profile_warmup:]))

    def _recv(self) -> object:
        message = self.conn.recv()
        if message == STOP:
            raise _Stopped
        return message

    def _round(self, plan: PlanReply) -> None:
        unpack_into(self.server_view, plan.pull)
        self.worker.load(self.server_view)
        for _ in range(plan.local_steps):
            if self.conn.poll():  # the server only ever speaks unasked to say stop
                self._recv()
            self._step(plan.batch_size)
        delta = self.worker.params() - self.server_view
        if plan.collective:
            self._all_reduce(delta * plan.share)
        else:
            self._push(plan, delta)

    def _step(self, batch_size: int) -> None:
        start = time.perf_counter()
        loss = self.worker.step(batch_size)
        compute = time.perf_counter() - start
        # The injected heterogeneity: a slower device is emulated by idling, not computing.
        # Sleeping cannot make a worker faster, so a slowdown below 1 runs at full speed.
        time.sleep(max(0.0, compute * (self.slowdown - 1.0)))
        self.conn.send(Step(self.index, loss, time.perf_counter() - start, batch_size))

    def _push(self, plan: PlanReply, delta: torch.Tensor) -> None:
        if plan.compress:
            if self.topk is None:
                self.topk = TopK(plan.topk_ratio, plan.error_feedback)
            payload = self.topk.compress(self.index, delta)
        else:
            payload = plain(delta)
        self.conn.send(Push(self.index, pack(payload.update), payload.nbytes, plan.compress))

    def _all_reduce(self, weighted: torch.Tensor) -> None:
        start = time.perf_counter()
        dist.all_reduce(weighted)
        wait = time.perf_counter() - start
        self.server_view += weighted
        self.worker.load(self.server_view)
        mean = pack(weighted) if self.index == 0 else None
        self.conn.send(Collective(self.index, mean, wait))


if __name__ == "__main__":
    main()
