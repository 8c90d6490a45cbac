"""The process backend's parameter server: spawns the workers, runs the sync mode, supervises.

This process holds the server's parameter vector and the sync mode object, so every decision
(may a worker start a round, how many local steps, compress or not, ASHL's phase switch) is
made by the same mode classes as in the emulated engine, on what the workers really did.
Time is this machine's wall clock from the moment every worker has profiled and joined.
A worker that dies stops the run with a `RunError` naming it; cancel, the end of the run or
any error stops every worker (STOP, then terminate, then kill), so none outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections import deque
from multiprocessing.connection import Connection, Listener, wait

import torch

from heterps_core import processes
from heterps_core.dataparallel.compression import VALUE_BYTES
from heterps_core.dataparallel.engine import DataParallelRun, held_out
from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.events import (
    CommitEvent,
    PhaseEvent,
    ProfileEvent,
    RebalanceEvent,
    StepEvent,
    WorkerProfile,
)
from heterps_core.dataparallel.flat import get_flat
from heterps_core.dataparallel.observers import ServerObservers
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
    dense,
    pack,
)
from heterps_core.dataparallel.profiling import pooled
from heterps_core.dataparallel.result import TrainResult, WorkerSummary
from heterps_core.dataparallel.stragglers import StragglerDetector
from heterps_core.rendezvous import serve
from heterps_core.runtime.errors import RunError

WORKER_MODULE = "heterps_core.dataparallel.process.worker"
POLL_S = 0.02
STOP_GRACE_S = 3.0
START_TIMEOUT_S = 120.0


class ProcessEngine(ServerObservers):
    def __init__(self, spec: DataParallelRun) -> None:
        cfg = spec.config
        self.spec, self.cfg, self.mode, self.emit = spec, cfg, spec.mode, spec.metrics
        self.server = spec.zoo_model.build(spec.model_config, seed=cfg.seed)
        self.held_out = held_out(spec.zoo_model, spec.model_config, cfg)
        self.theta = get_flat(self.server)
        self.dense_bytes = self.theta.numel() * VALUE_BYTES
        self.stale = torch.zeros(cfg.workers, self.theta.numel(), dtype=torch.bool)
        self.version = 0
        self.clocks = [0] * cfg.workers
        self.batch_sizes = [cfg.batch_size] * cfg.workers
        self.round_staleness = [0] * cfg.workers
        self.pulled_version = [0] * cfg.workers
        self.blocked_since: dict[int, float] = {}
        self.arrived: dict[int, float] = {}  # worker -> its wait in the running all-reduce
        self.in_collective: set[int] = set()  # workers given a collective plan not yet done
        self.collective_mean: torch.Tensor | None = None
        self.detector = StragglerDetector(cfg.workers, cfg.straggler_window, cfg.straggler_z)
        self.flags = tuple(False for _ in range(cfg.workers))
        self.per_sample: list[deque[float]] = [
            deque(maxlen=cfg.straggler_window) for _ in range(cfg.workers)
        ]
        self.global_step = 0
        self.stopped = ""
        self.failures: dict[int, str] = {}
        self.last_rebalance = 0.0
        self.summaries = [
            WorkerSummary(w, cfg.slowdown(w), batch_size=cfg.batch_size)
            for w in range(cfg.workers)
        ]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sentinels: list[int] = []
        self.conns: list[Connection] = []  # by worker index, once all have connected
        self.by_worker: dict[int, Connection] = {}  # as they connect
        self.t0 = 0.0

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> TrainResult:
        wall = time.perf_counter()
        try:
            self._spawn()
            profile = self._await_ready()
            self._train(profile)
        finally:
            self._shutdown()
        now = self._now()
        if not self.result.evals or self.result.evals[-1].time_s < now:
            self._evaluate(now)
        self.result.time_s = now
        self.result.global_steps = self.global_step
        self.result.stopped = self.stopped or "idle"
        self.result.wall_s = time.perf_counter() - wall
        return self.result

    def _spawn(self) -> None:
        self.store = serve()  # gloo's rendezvous for the workers' all-reduce
        address = f"127.0.0.1:{self.store.port}"
        authkey = secrets.token_bytes(16)
        with Listener(("127.0.0.1", 0), authkey=authkey) as listener:
            host, port = listener.address
            env = processes.child_env({"HETERPS_DP_AUTHKEY": authkey.hex()})
            for w in range(self.cfg.workers):
                self.procs.append(processes.spawn(WORKER_MODULE, [f"{host}:{port}", str(w)], env))
            self.sentinels = [os.pidfd_open(proc.pid) for proc in self.procs]
            for _ in range(self.cfg.workers):
                conn = self._accept(listener)
                w = conn.recv()
                self.by_worker[w] = conn
                conn.send(WorkerSpec(w, self.spec.zoo_model.name, self.spec.model_config,
                                     self.cfg, address, profile=self.spec.given_profile is None))
            self.conns = [self.by_worker[w] for w in range(self.cfg.workers)]

    def _accept(self, listener: Listener) -> Connection:
        # accept() blocks forever if a worker dies before connecting: wait on it with a timeout.
        sock = listener._listener._socket  # type: ignore[attr-defined]
        deadline = time.monotonic() + START_TIMEOUT_S
        while not wait([sock, *self.sentinels], 0.2):
            if time.monotonic() > deadline:
                raise RunError(f"workers did not start within {START_TIMEOUT_S:g} s",
                               self._pids())
        self._check_alive()
        return listener.accept()

    def _await_ready(self) -> tuple[WorkerProfile, ...]:
        measured: dict[int, WorkerProfile | None] = {}
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(measured) < self.cfg.workers:
            if time.monotonic() > deadline:
                raise RunError(f"workers did not start within {START_TIMEOUT_S:g} s",
                               self._pids())
            for message in self._receive(0.1):
                if isinstance(message, Ready):
                    measured[message.worker] = message.profile
        given = self.spec.given_profile
        if given is not None:
            if len(given) != self.cfg.workers:
                raise DataParallelError("profile",
                                        f"has {len(given)} workers, the job {self.cfg.workers}")
            return given
        profile = tuple(p for _, p in sorted(measured.items()) if p is not None)
        return pooled(profile) if self.cfg.profile_pool else profile

    def _train(self, profile: tuple[WorkerProfile, ...]) -> None:
        self.profile = profile
        self.emit(ProfileEvent(profile))
        self.profile_per_sample = [p.compute_s / p.batch_size for p in profile]
        self.result = TrainResult(self.mode.name, dict(self.mode.settings()), self.cfg.to_dict(),
                                  profile, self.summaries)
        self._evaluate(0.0)  # before the clock starts: the first one loads scipy
        self.t0 = time.perf_counter()
        for conn in self.conns:
            conn.send(GO)
        next_eval = self.cfg.eval_every_s
        while not self.stopped:
            if self.spec.cancel():
                self.stopped = "cancelled"
                break
            if self._now() >= self.cfg.duration_s:
                self.stopped = "duration"
                break
            if self._now() >= next_eval:
                self._evaluate(self._now())
                while next_eval <= self._now():  # a busy machine skips, never bunches, evals
                    next_eval += self.cfg.eval_every_s
                continue
            for message in self._receive(min(POLL_S, max(0.0, next_eval - self._now()))):
                self._handle(message)
                if self.stopped:
                    break

    def _now(self) -> float:
        return time.perf_counter() - self.t0 if self.t0 else 0.0

    # -- messages --------------------------------------------------------------------------

    def _receive(self, timeout: float) -> list[object]:
        """Every message that arrives within `timeout`; a dead worker raises `RunError`."""
        ready = wait([*self.conns, *self.sentinels], timeout)
        messages: list[object] = []
        for conn in self.conns:
            if conn not in ready:
                continue
            while conn.poll():
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    break
                if isinstance(message, Echo):
                    conn.send(Echo(None))
                elif isinstance(message, Failed):
                    self.failures[message.worker] = message.text
                else:
                    messages.append(message)
        if any(s in ready for s in self.sentinels):
            self._check_alive()
        return messages

    def _handle(self, message: object) -> None:
        if isinstance(message, RoundRequest):
            self._start(message.worker)
        elif isinstance(message, Step):
            self._step(message)
        elif isinstance(message, Push):
            self._push(message)
        elif isinstance(message, Collective):
            self._collective(message)

    def _check_alive(self) -> None:
        for w, proc in enumerate(self.procs):
            if proc.poll() is not None:
                self._fail(w, proc)

    def _send(self, w: int, message: object) -> None:
        """Send to worker `w`; a worker that died since its last message fails the run the same
        readable way as one found dead by polling (not with a bare BrokenPipeError)."""
        try:
            self.conns[w].send(message)
        except OSError as exc:
            proc = self.procs[w]
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_GRACE_S)
            if proc.returncode is None:
                raise RunError(f"lost the connection to data-parallel worker {w} "
                               f"(pid {proc.pid}): {exc}", self._pids()) from exc
            self._fail(w, proc)

    def _fail(self, w: int, proc: subprocess.Popen[bytes]) -> None:
        conn = self.by_worker.get(w)
        with contextlib.suppress(EOFError, OSError):
            while conn is not None and conn.poll():  # its last words, if it said any
                message = conn.recv()
                if isinstance(message, Failed):
                    self.failures[w] = message.text
        how = processes.exit_text(proc.returncode, numeric=True)
        detail = self.failures.get(w, "")
        step = f" at global step {self.global_step}" if self.t0 else " while starting"
        raise RunError(f"data-parallel worker {w} (pid {proc.pid}) {how}{step}"
                       + (f": {detail}" if detail else "")
                       + "; the other workers were stopped", self._pids())

    # -- a worker's round ------------------------------------------------------------------

    def _batch_size(self, w: int) -> int:
        return self.batch_sizes[w]

    def _start(self, w: int) -> None:
        # A worker still inside an all-reduce the server has not seen complete waits for it.
        admitted = self._admit(self._now(), w, busy=w in self.arrived)
        if admitted is None:
            return
        plan, staleness = admitted
        summary = self.summaries[w]
        self.round_staleness[w] = staleness
        self.pulled_version[w] = self.version
        pull = pack(self.theta, self.stale[w])
        self.stale[w] = False
        summary.bytes_received += pull.nbytes
        if plan.collective:
            self.in_collective.add(w)
        compressor = self.mode.compressor
        self._send(w, PlanReply(
            local_steps=plan.local_steps, collective=plan.collective,
            compress=plan.compress and compressor is not None,
            topk_ratio=compressor.ratio if compressor else 1.0,
            error_feedback=compressor.error_feedback if compressor else False,
            batch_size=self.batch_sizes[w], share=self.batch_sizes[w] / sum(self.batch_sizes),
            pull=pull,
        ))

    def _step(self, step: Step) -> None:
        w, now = step.worker, self._now()
        summary = self.summaries[w]
        self.global_step += 1
        summary.steps += 1
        summary.compute_s += step.step_time_s
        summary.batch_size = step.batch_size
        self.per_sample[w].append(step.step_time_s / step.batch_size)
        self.detector.record(w, step.step_time_s)
        self._update_flags(now)
        self.emit(StepEvent(w, summary.steps, self.global_step, now, step.step_time_s, step.loss,
                            self.round_staleness[w], summary.bytes_sent, self.mode.phase(),
                            self.flags[w], step.batch_size))
        previous = self.mode.phase()
        reason = self.mode.observe_loss(step.loss, self._view(self._now()))
        if reason is not None:
            event = PhaseEvent(now, self.global_step, previous, self.mode.phase(), reason,
                               step.loss)
            self.result.switch = event
            self.emit(event)
        if self.cfg.max_steps is not None and self.global_step >= self.cfg.max_steps:
            self.stopped = "max_steps"

    def _push(self, push: Push) -> None:
        w = push.worker
        update = dense(push.update)
        self.theta.add_(update)
        self.stale |= update != 0
        lag = self.version - self.pulled_version[w]
        self.version += 1
        self.clocks[w] += 1
        summary = self.summaries[w]
        summary.commits += 1
        summary.bytes_sent += push.nbytes
        self.emit(CommitEvent(w, self._now(), push.nbytes, lag, self.round_staleness[w],
                              self.mode.phase(), push.compressed))
        self._retry_blocked()

    def _collective(self, done: Collective) -> None:
        self.arrived[done.worker] = done.wait_s
        if done.mean is not None:
            self.collective_mean = dense(done.mean)
        if len(self.arrived) < self.cfg.workers or self.collective_mean is None:
            return
        n = self.cfg.workers
        self.theta.add_(self.collective_mean)
        self.version += 1
        ring_bytes = int(2 * (n - 1) / n * self.dense_bytes)  # gloo's ring all-reduce
        for v in range(n):
            summary = self.summaries[v]
            summary.wait_s += self.arrived[v]
            summary.bytes_sent += ring_bytes
            summary.bytes_received += ring_bytes
            summary.commits += 1
            self.clocks[v] += 1
        self.arrived.clear()
        self.in_collective.clear()
        self.collective_mean = None
        self.stale[:] = False
        self.emit(CommitEvent(-1, self._now(), ring_bytes, 0, 0, self.mode.phase(), False))
        self._retry_blocked()

    def _retry_blocked(self) -> None:
        for other in sorted(self.blocked_since):
            self._start(other)

    # -- observers -------------------------------------------------------------------------

    def _rebalance(self, t: float) -> None:
        # Never inside an all-reduce round: its shares (batch / total) must add up to 1.
        if self.in_collective:
            return
        sizes = self._rebalanced(t, tuple(self.batch_sizes))
        if sizes is None:
            return
        self.batch_sizes = list(sizes)
        self.emit(RebalanceEvent(t, sizes))

    # -- shutdown --------------------------------------------------------------------------

    def _pids(self) -> tuple[int, ...]:
        return tuple(p.pid for p in self.procs)

    def _shutdown(self) -> None:
        for conn in self.by_worker.values():
            with contextlib.suppress(OSError):
                conn.send(STOP)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        # A worker blocked in an all-reduce whose peers have stopped never reads STOP.
        processes.stop_all(self.procs, grace_s=1.0)
        for conn in self.by_worker.values():
            conn.close()
        for fd in self.sentinels:
            os.close(fd)
        self.sentinels = []
