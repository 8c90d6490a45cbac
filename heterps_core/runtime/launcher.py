"""The launcher: starts a compiled job's processes, supervises them, and reports what they
achieve. It only starts, polls and stops; `compile.py` turns the run config into the job
spec, `assignment.py` hands agents their ranks, `drain.py` handles a spot notice,
`failures.py` words a failure, `result.py` holds what comes back (`summary.py` assembles
it), and `heterps_core.processes` the process plumbing.

One OS process per stage replica plus the parameter-server shards, all joined through a
torch.distributed TCPStore held here. Local ranks are child processes (they die with the
launcher: PR_SET_PDEATHSIG); ranks bound to `remote` go to worker agents that joined the
same store (see assignment.py and docs/operations.md). Between its checks the launcher
blocks (wakeup.py) until a local process ends, a drain is asked for, or the next check is
due: heartbeats every `liveness.BEAT_S`, the metric chunks and a sample every report
interval, and every `TICK_S` what nothing can wake it for (a cancel hook, agents' reports).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import IO

import torch.distributed as dist

from heterps_core import processes
from heterps_core import rendezvous as keys
from heterps_core.processes import CancelHook
from heterps_core.runtime import assignment, checkpoint, liveness, netif, template
from heterps_core.runtime.binding import parse_target
from heterps_core.runtime.compile import ALL_INTERFACES, RunConfig, compile_run
from heterps_core.runtime.compile import fingerprint as job_fingerprint
from heterps_core.runtime.drain import Drain
from heterps_core.runtime.errors import RunCancelled, RunError, RunPreempted
from heterps_core.runtime.failures import culprit_message, error_text, lost_message, remote_where
from heterps_core.runtime.metrics import Collector, MetricsSink, no_metrics
from heterps_core.runtime.result import RunResult
from heterps_core.runtime.sealing import Sealer
from heterps_core.runtime.spec import WORKER_MODULE, RankSpec
from heterps_core.runtime.summary import run_result
from heterps_core.runtime.wakeup import Wakeup

# How often the launcher looks at what cannot wake it: a cancel hook (an event or a callable)
# and, with remote ranks, the agents' exit reports, drain requests and joins in the store.
TICK_S = 0.1
EXIT_REPORT_S = 5.0  # a forked process's exit code comes from its template, just after
__all__ = ["CancelHook", "Launcher", "RunConfig", "RunResult", "launch"]


class Launcher:
    """`start()` then `wait()` (or `run()`); `pids` lists the local processes for supervision."""

    def __init__(
        self, config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
    ) -> None:
        self.config = config
        self.sink = sink
        self._cancel = cancel
        # A fresh attempt id per launch: only parts this attempt wrote seal a step.
        self.spec = replace(compile_run(config), attempt=uuid.uuid4().hex)
        self.resume_notice: str | None = None  # set by start() when a resume passed steps over
        self._procs: dict[int, processes.Process] = {}
        self._starter: template.Starter | None = None  # made by start()
        self._logs: dict[int, IO[bytes]] = {}
        self._exited: dict[int, int] = {}
        self._store: dist.TCPStore | None = None
        self.log_dir = Path(config.log_dir) if config.log_dir else Path()  # made by start()
        self.address = ""
        self._liveness: liveness.Liveness  # made by start(), with the store
        self._sealer: Sealer  # made by start(), with the store
        self._drain = Drain(self.spec, self._wake)  # a spot notice: last checkpoint, then end
        self._wakeup: Wakeup | None = None  # made by start(): what wait() blocks on
        self._gloo: netif.GlooInterface | None = None  # local ranks' interface (netif.py)

    @property
    def pids(self) -> dict[int, int]:
        return {rank: proc.pid for rank, proc in self._procs.items()}

    def start(self) -> None:
        cfg = self.config
        spec = self.spec
        if spec.checkpoint_dir is not None:
            checkpoint.check_job(spec.checkpoint_dir, job_fingerprint(spec))
            self.resume_notice = checkpoint.set_aside(spec.checkpoint_dir, spec.start_step,
                                                      spec.resume_skipped, spec.attempt)
        self._store = keys.serve(cfg.host, cfg.port)
        self._sealer = Sealer(self._store, spec.checkpoint_dir, spec.attempt,
                              range(spec.world_size))
        self._liveness = liveness.Liveness(self._store, self.spec, cfg.watchdog_s,
                                           cfg.heartbeat_timeout_s, cfg.startup_timeout_s)
        host = "127.0.0.1" if cfg.host in (ALL_INTERFACES, "") else cfg.host
        self.address = f"{host}:{self._store.port}"
        self._gloo = netif.choose(cfg.host, "heterps launcher")
        self._store.set(keys.SPEC, self.spec.to_json())
        self.log_dir = Path(self.config.log_dir or tempfile.mkdtemp(prefix="heterps-run-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # Forked from a template that has imported torch (template.py), else fresh interpreters.
        self._starter = template.Starter()
        self._wakeup = Wakeup()
        for rank in self.spec.ranks:
            if assignment.launched_here(rank):
                self._spawn(rank)

    def _spawn(self, rank: RankSpec) -> None:
        env = processes.child_env(gloo_interface=self._gloo.name if self._gloo else None)
        env.setdefault("OMP_NUM_THREADS", str(parse_target(rank.target).threads))
        # Every mini-batch allocates the same large activations; glibc would hand each back
        # to the kernel and page-fault it in again (about 6% of a CPU stage's time).
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 30))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1 << 32))
        log = open(self.log_dir / f"rank{rank.rank}.log", "wb")  # noqa: SIM115 closed in _stop_all
        self._logs[rank.rank] = log
        args = ["--store", self.address, "--rank", str(rank.rank)]
        assert self._starter is not None
        self._procs[rank.rank] = proc = self._starter.start(WORKER_MODULE, args, env, log)
        assert self._wakeup is not None
        self._wakeup.watch(rank.rank, proc.pid)

    # --- supervision -------------------------------------------------------------------------

    def run(self) -> RunResult:
        self.start()
        return self.wait()

    def wait(self) -> RunResult:
        assert self._store is not None, "start() first"
        store, spec = self._store, self.spec
        collector = Collector(
            store, spec, self.config.plan.cost_per_hour or 0.0, self.sink,
            predicted=tuple(s.time_per_batch_s for s in self.config.plan.stages),
        )
        handout = assignment.Handout(spec, self.config.agent_timeout_s)
        last_emit = last_watch = time.monotonic()
        self._liveness.launched([r.rank for r in spec.ranks if assignment.launched_here(r)])
        restore = self._drain.on_sigterm()
        assert self._wakeup is not None
        unhook = self._wakeup.wake_on_signals()
        try:
            while len(self._exited) < len(spec.processes):
                due = min(last_watch + liveness.BEAT_S, last_emit + self.config.report_interval_s)
                if self._cancel is not None or handout.remote or self._drain.pending:
                    due = min(due, time.monotonic() + TICK_S)
                ended = self._wakeup.wait(due - time.monotonic())
                self._hand_out(handout)
                self._check_exits(ended)
                if processes.cancelled(self._cancel):
                    collector.poll()
                    raise RunCancelled(collector.step, self._checkpoint_step(), self._pid_tuple())
                # Only agents set the drain key: a local job reads the store for a drain
                # only once one was asked for here (SIGTERM, request_drain).
                if self._drain.stop_at is None and (self._drain.reason or handout.remote):
                    collector.poll()  # the metrics' speed, one guess at the stages' own
                    self._drain.poll(store, collector.steady_throughput, self._exited)
                if time.monotonic() - last_watch >= liveness.BEAT_S:
                    collector.poll()
                    # Armed by a mini-batch of this attempt, not a resume's start step.
                    self._watch(trained=collector.step > spec.start_step)
                    last_watch = time.monotonic()
                if time.monotonic() - last_emit >= self.config.report_interval_s:
                    collector.poll()
                    collector.emit()
                    last_emit = time.monotonic()
                    self._prune()
            collector.poll()
            final = collector.emit(final=True)
            self._prune()  # seals the last checkpoint, keeps the newest two
        finally:
            unhook()
            restore()
            self._stop_all()
        result = run_result(self.config, spec, store, collector, final, self._checkpoint_step(),
                            self._pid_tuple(), tuple(self._sealer.sealed))
        if self._drain.stop_at is not None:
            raise RunPreempted(self._drain.stop_at, result.checkpoint_step,
                               self._drain.reason or "", self._pid_tuple())
        return result

    def _hand_out(self, handout: assignment.Handout) -> None:
        """Remote ranks to the agents that joined; their heartbeats are watched from then on."""
        assert self._store is not None
        if handout.poll(self._store):
            self._liveness.agents = assignment.assigned(self._store)
            self._liveness.launched([r for info in self._liveness.agents for r in info.ranks])
        elif (late := handout.overdue()) is not None:
            raise RunError(f"{late} (coordinator {self.address})", self._pid_tuple())

    def request_drain(self, reason: str) -> None:
        """Have every stage checkpoint at a common step soon and end (safe in a signal handler)."""
        self._drain.request(reason)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.wake()

    # --- liveness: heartbeats of agents and processes (liveness.py) --------------------------

    def _watch(self, trained: bool) -> None:
        """Fail the run naming a lost machine, a process that stopped, or (before the run's
        first mini-batch) one still starting past the start-up timeout."""
        problem = self._liveness.problem(self._exited, trained, self.pids)
        if problem is not None:
            self._stop_all()
            raise RunError(problem + self._checkpoint_text(), self._pid_tuple())

    def _checkpoint_text(self) -> str:
        step = self._checkpoint_step()
        return f"; last complete checkpoint: step {step}" if step else ""

    def _check_exits(self, ended: set[int]) -> None:
        """Record the processes that ended (`ended`: those the wake-up saw end), failing the
        run if one failed."""
        assert self._store is not None and self._wakeup is not None
        failed: list[int] = []
        for rank, proc in self._procs.items():
            if rank in self._exited:
                continue
            code = self._exit_code(proc) if rank in ended else proc.poll()
            if code is not None:
                self._exited[rank] = code
                self._wakeup.unwatch(rank)
                failed += [rank] if code != 0 else []
        for remote in self.spec.ranks:
            if remote.rank in self._exited or not assignment.is_remote(remote):
                continue
            if (code := assignment.exit_of(self._store, remote.rank)) is not None:
                self._exited[remote.rank] = code
                failed += [remote.rank] if code != 0 else []
        if failed:
            self._fail(failed)

    @staticmethod
    def _exit_code(proc: processes.Process) -> int | None:
        try:
            return proc.wait(EXIT_REPORT_S)
        except subprocess.TimeoutExpired:
            return None

    def _fail(self, failed: list[int]) -> None:
        # Peers of a dead process fail soon after it: wait a moment, then blame (failures.py).
        before = self._liveness.beats()
        time.sleep(0.2)
        lost = self._liveness.lost_machine(before)
        self._stop_all()
        if lost:
            message = lost_message(lost, self._exited, self._checkpoint_text())
        else:
            assert self._store is not None
            store = self._store
            gloo = self._gloo.describe() if self._gloo else ""
            message = culprit_message(self.spec, self._exited, failed,
                                      lambda rank: error_text(store, self.log_dir, rank, gloo),
                                      self._checkpoint_text(),
                                      lambda rank: remote_where(store, self.spec, rank))
        raise RunError(message, self._pid_tuple())

    def _stop_all(self) -> None:
        if self._store is not None:
            self._store.set(keys.STOP, "1")
        processes.stop_all(self._procs.values())
        if self._starter is not None:
            self._starter.close()
        for rank, proc in self._procs.items():
            self._exited.setdefault(rank, proc.wait())  # stop_all has reaped every one
        for log in self._logs.values():
            log.close()
        if self._wakeup is not None:
            self._wakeup.close()

    def _checkpoint_step(self) -> int | None:
        """The newest complete checkpoint, after sealing the steps every rank of this attempt
        reported writing (sealing.py)."""
        if self.spec.checkpoint_dir is None:
            return None
        self._sealer.poll()
        return checkpoint.latest_complete(self.spec.checkpoint_dir, self.spec.world_size)

    def _prune(self) -> None:
        if self.spec.checkpoint_dir is not None:
            self._sealer.poll()
            checkpoint.prune(self.spec.checkpoint_dir, self.spec.world_size)

    def _pid_tuple(self) -> tuple[int, ...]:
        return tuple(self.pids.values())


def launch(
    config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
) -> RunResult:
    """Run a plan to the end (or raise RunError / RunCancelled); the one call most users need."""
    return Launcher(config, sink, cancel).run()
