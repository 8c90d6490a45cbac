"""A worker process: its own replica of the dense layers, optimiser and shard of the data;
rounds as the server plans them.

Every round: ask the server for a plan (it answers once the sync mode lets this worker start,
with the dense entries that changed since its last pull), run the local steps, then push the
dense update (top-k compressed when the plan says so, with this worker's own error-feedback
residual) or all-reduce it with the other workers over gloo. A BSP round (one collective
step) all-reduces the gradients instead, before the optimiser step, so that every worker's
Adam or Adagrad takes the step one worker would take on all the workers' batches. Every
step pulls the table rows its mini-batch looks up from the server and pushes their gradient
rows back (rows.py); the tables' optimiser runs on the server.
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

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

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
    RowPull,
    RowPush,
    RowReply,
    Step,
    WorkerSpec,
    pack,
    unpack_into,
)
from heterps_core.dataparallel.process.nodelay import no_delay
from heterps_core.dataparallel.profiling import profile_one, trimmed_mean
from heterps_core.dataparallel.rows import Rows, detach_tables
from heterps_core.dataparallel.worker import GradientHook, Worker
from heterps_core.ps import optim
from heterps_core.rendezvous import connect
from heterps_core.zoo.tables import tables_on_meta

GLOO_TIMEOUT = timedelta(seconds=60)


class _Stopped(Exception):
    """The server said stop."""


def main(argv: list[str] | None = None) -> None:
    """`python -m heterps_core.dataparallel.process.worker HOST:PORT INDEX` (the server runs it)."""
    server, index = (argv if argv is not None else sys.argv[1:])[:2]
    host, _, port = server.rpartition(":")
    try:
        conn = no_delay(Client((host, int(port)),
                               authkey=bytes.fromhex(os.environ["HETERPS_DP_AUTHKEY"])))
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
        with tables_on_meta():  # the tables stay on the server
            model = zoo_model.build(spec.model_config, seed=self.cfg.seed)
        specs = detach_tables(model, optim.create(self.cfg.optimizer, self.cfg.lr))
        self.dims = [spec.dim for spec in specs]  # a row reply's widths, table by table
        stream = shard_stream(zoo_model, spec.model_config, self.cfg, 1 + spec.index)
        # A model without tables has nothing to pull (and no ids to collect with a forward).
        rows = Rows(model, _ServerRows(self), specs) if specs else None
        self.worker = Worker(spec.index, model, stream, self.cfg.batch_size, self.cfg.lr,
                             self.cfg.momentum, self.cfg.optimizer, rows)
        self.profile_stream = shard_stream(zoo_model, spec.model_config, self.cfg,
                                           500 + spec.index)
        self.server_view = self.worker.params()  # the server's vector as of the last pull
        self.topk: TopK | None = None
        self.reduce_wait = 0.0  # seconds the last gradient all-reduce waited

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
        # BSP: all-reduce gradients, the same optimiser step on every worker. Local SGD:
        # average the parameters after the local steps (that is the method).
        gradients = plan.collective and plan.local_steps == 1
        reduce = self._reducer(plan.share) if gradients else None
        # A synchronous shard averages the workers' row pushes: a rebalanced share weighs them.
        row_scale = plan.share * self.cfg.workers if plan.collective else 1.0
        for _ in range(plan.local_steps):
            if self.conn.poll():  # the server only ever speaks unasked to say stop
                self._recv()
            self._step(plan.batch_size, reduce, row_scale)
        params = self.worker.params()
        delta = params - self.server_view
        if gradients:
            self._collective_done(params, delta, self.reduce_wait)
        elif plan.collective:
            self._all_reduce(delta * plan.share)
        else:
            self._push(plan, delta)

    def _step(self, batch_size: int, reduce: GradientHook | None, row_scale: float) -> None:
        start = time.perf_counter()
        loss = self.worker.step(batch_size, reduce, row_scale)
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

    def _reducer(self, share: float) -> GradientHook:
        """Replace every dense gradient by the share-weighted sum over the workers."""
        def reduce(params: list[nn.Parameter]) -> None:
            grads = [p.grad for p in params if p.grad is not None]
            flat = torch.cat([g.reshape(-1) for g in grads]).mul_(share)
            start = time.perf_counter()
            dist.all_reduce(flat)
            self.reduce_wait = time.perf_counter() - start
            offset = 0
            for grad in grads:
                grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
                offset += grad.numel()
        return reduce

    def _collective_done(self, params: torch.Tensor, delta: torch.Tensor, wait: float) -> None:
        """After a gradient all-reduce every worker holds the same parameters: worker 0
        hands the step's update to the server (for evaluation and later pulls)."""
        self.server_view = params  # exactly what every worker holds, for the next round's load
        mean = pack(delta) if self.index == 0 else None
        self.conn.send(Collective(self.index, mean, wait))

    # -- table rows: the server's (`_ServerRows`) ------------------------------------------

    def pull_rows(self, round_: int, ids: list[torch.Tensor]) -> list[torch.Tensor]:
        self.conn.send(RowPull(self.index, round_, [part.numpy() for part in ids]))
        reply = self._recv()
        assert isinstance(reply, RowReply)
        parts = reply.split([part.numel() for part in ids], self.dims)
        return [torch.from_numpy(rows) for rows in parts]

    def push_rows(self, round_: int, ids: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        self.conn.send(RowPush(self.index, round_, [part.numpy() for part in ids],
                               [np.ascontiguousarray(g.numpy(), np.float32) for g in grads]))


class _ServerRows:
    """The parameter server as a worker's `RowSource`, over the worker's socket."""

    def __init__(self, process: _WorkerProcess) -> None:
        self.process = process

    def pull(self, round_: int, ids: list[torch.Tensor]) -> list[torch.Tensor]:
        return self.process.pull_rows(round_, ids)

    def push(self, round_: int, ids: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        self.process.push_rows(round_, ids, grads)


if __name__ == "__main__":
    main()
