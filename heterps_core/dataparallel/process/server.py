"""The process backend's parameter server: spawns the workers, runs the sync mode, supervises.

This process holds the server's parameter vector and the sync mode object, so every decision
(may a worker start a round, how many local steps, compress or not, ASHL's phase switch) is
made by the same mode classes as in the emulated engine, on what the workers really did.
Time is this machine's wall clock from the moment every worker has profiled and joined.
A worker that dies stops the run with a `RunError` naming it; cancel, the end of the run or
any error stops every worker (STOP, then terminate, then kill), so none outlives the run.

This process also holds the embedding tables, as one `ps.Shard` (rows.py): workers pull the
rows each step looks up and push their gradient rows, and the shard applies the optimiser
to those rows only. The flat parameter vector of `ServerState` is the dense layers only.

This module keeps only the transport (processes, sockets, the wall clock); what the server
decides is `state.ServerState`, shared with the emulated backend, which `rounds.Rounds`
calls for a worker's round messages; the tables' rows are served by `tables.TableServer`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from multiprocessing.connection import Connection, Listener, wait

from heterps_core import processes
from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.events import WorkerProfile
from heterps_core.dataparallel.job import DataParallelRun
from heterps_core.dataparallel.process.messages import (
    GO,
    STOP,
    Collective,
    Echo,
    Failed,
    Push,
    Ready,
    RoundRequest,
    RowPull,
    RowPush,
    Step,
    WorkerSpec,
)
from heterps_core.dataparallel.process.nodelay import no_delay
from heterps_core.dataparallel.process.rounds import Rounds
from heterps_core.dataparallel.process.tables import TableServer
from heterps_core.dataparallel.profiling import pooled
from heterps_core.dataparallel.result import TrainResult
from heterps_core.dataparallel.state import ServerState
from heterps_core.rendezvous import serve
from heterps_core.runtime.errors import RunError
from heterps_core.zoo.tables import tables_on_meta

WORKER_MODULE = "heterps_core.dataparallel.process.worker"
POLL_S = 0.02
STOP_GRACE_S = 3.0
START_TIMEOUT_S = 120.0


class ProcessBackend:
    def __init__(self, run: DataParallelRun) -> None:
        self.run_spec = run
        self.cfg = cfg = run.config
        with tables_on_meta():  # rows exist on the shard only, once touched
            server = run.build()
        self.tables = TableServer(run, server, self._send)  # takes the tables out of `server`
        self.state = ServerState(run, server)
        self.rounds = Rounds(self.state, cfg.workers, self._send, self._now)
        self.failures: dict[int, str] = {}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sentinels: list[int] = []
        self.conns: list[Connection] = []  # by worker index, once all have connected
        self.by_worker: dict[int, Connection] = {}  # as they connect
        self.t0 = 0.0

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> TrainResult:
        try:
            self._spawn()
            profile = self._await_ready()
            self._train(profile)
        finally:
            self._shutdown()
        return self.state.finish(self._now())

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
                conn = no_delay(self._accept(listener))
                w = conn.recv()
                self.by_worker[w] = conn
                conn.send(WorkerSpec(w, self.run_spec.zoo_model.name, self.run_spec.model_config,
                                     self.cfg, address,
                                     profile=self.run_spec.given_profile is None))
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
        given = self.run_spec.given_profile
        if given is not None:
            if len(given) != self.cfg.workers:
                raise DataParallelError("profile",
                                        f"has {len(given)} workers, the job {self.cfg.workers}")
            return given
        profile = tuple(p for _, p in sorted(measured.items()) if p is not None)
        return pooled(profile) if self.cfg.profile_pool else profile

    def _train(self, profile: tuple[WorkerProfile, ...]) -> None:
        state = self.state
        state.begin(profile)
        state.evaluate(0.0)  # before the clock starts: the first one loads scipy
        self.t0 = time.perf_counter()
        for conn in self.conns:
            conn.send(GO)
        next_eval = self.cfg.eval_every_s
        while not state.stopped:
            if state.should_stop(self._now()):
                break
            if self._now() >= next_eval:
                state.evaluate(self._now())
                while next_eval <= self._now():  # a busy machine skips, never bunches, evals
                    next_eval += self.cfg.eval_every_s
                continue
            for message in self._receive(min(POLL_S, max(0.0, next_eval - self._now()))):
                self._handle(message)
                if state.stopped:
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
            self.rounds.start(message.worker)
        elif isinstance(message, Step):
            self.rounds.step(message)
        elif isinstance(message, Push):
            self.rounds.push(message)
        elif isinstance(message, Collective):
            self.rounds.collective(message)
        elif isinstance(message, RowPull):
            self.tables.pull(message, self.state.summaries)
        elif isinstance(message, RowPush):
            self.tables.push(message, self.state.summaries)

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
        step = f" at global step {self.state.global_step}" if self.t0 else " while starting"
        raise RunError(f"data-parallel worker {w} (pid {proc.pid}) {how}{step}"
                       + (f": {detail}" if detail else "")
                       + "; the other workers were stopped", self._pids())

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
