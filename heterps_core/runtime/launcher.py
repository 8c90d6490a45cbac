"""The launcher: starts a compiled job's processes, supervises them, and reports what they
achieve. It only starts, polls and stops; `compile.py` turns the run config into the job
spec, `assignment.py` hands agents their ranks, `drain.py` handles a spot notice,
`failures.py` words a failure, `result.py` holds what comes back, and
`heterps_core.processes` the process plumbing.

One OS process per stage replica plus the parameter-server shards, all joined through a
torch.distributed TCPStore held here. Local ranks are child processes (they die with the
launcher: PR_SET_PDEATHSIG); ranks bound to `remote` go to worker agents that joined the
same store (see assignment.py and docs/operations.md). The launcher polls the children, the
store's metric chunks, the cancel hook and the agents' exit reports every few milliseconds.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

import torch.distributed as dist

from heterps_core import processes
from heterps_core import rendezvous as keys
from heterps_core.processes import CancelHook
from heterps_core.runtime import assignment, checkpoint, liveness
from heterps_core.runtime.binding import parse_target
from heterps_core.runtime.compile import ALL_INTERFACES, RunConfig, binding_text, compile_run
from heterps_core.runtime.compile import fingerprint as job_fingerprint
from heterps_core.runtime.drain import Drain
from heterps_core.runtime.errors import RunCancelled, RunError, RunPreempted
from heterps_core.runtime.failures import culprit_message, error_text, lost_message
from heterps_core.runtime.metrics import Collector, MetricsSample, MetricsSink, no_metrics
from heterps_core.runtime.result import RunResult, process_stats
from heterps_core.runtime.spec import WORKER_MODULE, RankSpec

POLL_S = 0.02
__all__ = ["CancelHook", "Launcher", "RunConfig", "RunResult", "launch"]


class Launcher:
    """`start()` then `wait()` (or `run()`); `pids` lists the local processes for supervision."""

    def __init__(
        self, config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
    ) -> None:
        self.config = config
        self.sink = sink
        self._cancel = cancel
        self.spec = compile_run(config)
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._logs: dict[int, IO[bytes]] = {}
        self._exited: dict[int, int] = {}
        self._store: dist.TCPStore | None = None
        self.log_dir = Path(config.log_dir) if config.log_dir else Path()  # made by start()
        self.address = ""
        self._liveness: liveness.Liveness  # made by start(), with the store
        self._drain = Drain(self.spec)  # a spot notice: a final checkpoint, then the end

    @property
    def pids(self) -> dict[int, int]:
        return {rank: proc.pid for rank, proc in self._procs.items()}

    def start(self) -> None:
        cfg = self.config
        if self.spec.checkpoint_dir is not None:
            checkpoint.check_job(self.spec.checkpoint_dir, job_fingerprint(self.spec))
        self._store = keys.serve(cfg.host, cfg.port)
        self._liveness = liveness.Liveness(self._store, self.spec, cfg.watchdog_s,
                                           cfg.heartbeat_timeout_s)
        host = "127.0.0.1" if cfg.host in (ALL_INTERFACES, "") else cfg.host
        self.address = f"{host}:{self._store.port}"
        self._store.set(keys.SPEC, self.spec.to_json())
        self.log_dir = Path(self.config.log_dir or tempfile.mkdtemp(prefix="heterps-run-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for rank in self.spec.ranks:
            if not assignment.is_remote(rank):
                self._spawn(rank)

    def _spawn(self, rank: RankSpec) -> None:
        env = processes.child_env(loopback=self.config.host in ("127.0.0.1", "localhost"))
        env.setdefault("OMP_NUM_THREADS", str(parse_target(rank.target).threads))
        # Every mini-batch allocates the same large activations; glibc would hand each back
        # to the kernel and page-fault it in again (about 6% of a CPU stage's time).
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 30))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1 << 32))
        log = open(self.log_dir / f"rank{rank.rank}.log", "wb")  # noqa: SIM115 closed in _stop_all
        self._logs[rank.rank] = log
        args = ["--store", self.address, "--rank", str(rank.rank)]
        self._procs[rank.rank] = processes.spawn(WORKER_MODULE, args, env, log)

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
        restore = self._drain.on_sigterm()
        try:
            while len(self._exited) < spec.world_size:
                self._hand_out(handout)
                self._check_exits()
                collector.poll()
                if processes.cancelled(self._cancel):
                    raise RunCancelled(collector.step, self._checkpoint_step(), self._pid_tuple())
                self._drain.poll(store, collector.step, collector.steady_throughput)
                if time.monotonic() - last_watch >= liveness.BEAT_S:
                    self._watch(training=collector.step > 0)
                    last_watch = time.monotonic()
                if time.monotonic() - last_emit >= self.config.report_interval_s:
                    collector.emit()
                    last_emit = time.monotonic()
                    self._prune()
                time.sleep(POLL_S)
            collector.poll()
            final = collector.emit(final=True)
            self._prune()  # seals the last checkpoint, keeps the newest two
        finally:
            restore()
            self._stop_all()
        result = self._result(collector, final)
        if self._drain.stop_at is not None:
            raise RunPreempted(self._drain.stop_at, result.checkpoint_step,
                               self._drain.reason or "", self._pid_tuple())
        return result

    def _hand_out(self, handout: assignment.Handout) -> None:
        """Remote ranks to the agents that joined; their heartbeats are watched from then on."""
        assert self._store is not None
        if handout.poll(self._store):
            self._liveness.agents = assignment.assigned(self._store)
        elif (late := handout.overdue()) is not None:
            raise RunError(f"{late} (coordinator {self.address})", self._pid_tuple())

    def request_drain(self, reason: str) -> None:
        """Have every stage checkpoint at a common step soon and end (safe in a signal handler)."""
        self._drain.request(reason)

    # --- liveness: heartbeats of agents and processes (liveness.py) --------------------------

    def _watch(self, training: bool) -> None:
        """Fail the run naming a lost machine or a process that stopped."""
        problem = self._liveness.problem(self._exited, training)
        if problem is not None:
            self._stop_all()
            raise RunError(problem + self._checkpoint_text(), self._pid_tuple())

    def _checkpoint_text(self) -> str:
        step = self._checkpoint_step()
        return f"; last complete checkpoint: step {step}" if step else ""

    def _check_exits(self) -> None:
        assert self._store is not None
        failed: list[int] = []
        for rank, proc in self._procs.items():
            if rank not in self._exited and (code := proc.poll()) is not None:
                self._exited[rank] = code
                failed += [rank] if code != 0 else []
        for remote in self.spec.ranks:
            if remote.rank in self._exited or not assignment.is_remote(remote):
                continue
            if (code := assignment.exit_of(self._store, remote.rank)) is not None:
                self._exited[remote.rank] = code
                failed += [remote.rank] if code != 0 else []
        if failed:
            self._fail(failed)

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
            message = culprit_message(self.spec, self._exited, failed,
                                      lambda rank: error_text(store, self.log_dir, rank),
                                      self._checkpoint_text())
        raise RunError(message, self._pid_tuple())

    def _stop_all(self) -> None:
        if self._store is not None:
            self._store.set(keys.STOP, "1")
        processes.stop_all(self._procs.values())
        for rank, proc in self._procs.items():
            self._exited.setdefault(rank, proc.returncode)
        for log in self._logs.values():
            log.close()

    def _checkpoint_step(self) -> int | None:
        """The newest complete checkpoint, after sealing the steps whose parts are all in."""
        if self.spec.checkpoint_dir is None:
            return None
        checkpoint.seal(self.spec.checkpoint_dir, self.spec.world_size)
        return checkpoint.latest_complete(self.spec.checkpoint_dir, self.spec.world_size)

    def _prune(self) -> None:
        if self.spec.checkpoint_dir is not None:
            checkpoint.seal(self.spec.checkpoint_dir, self.spec.world_size)
            checkpoint.prune(self.spec.checkpoint_dir, self.spec.world_size)

    def _pid_tuple(self) -> tuple[int, ...]:
        return tuple(self.pids.values())

    # --- the result --------------------------------------------------------------------------

    def _result(self, collector: Collector, final: MetricsSample) -> RunResult:
        assert self._store is not None
        spec, cfg = self.spec, self.config
        binding = binding_text(cfg.binding, spec.stages)
        plan = cfg.plan.with_notes("binding: " + ",".join(f"{k}={v}" for k, v in binding.items()))
        busy, idle = collector.totals()
        losses = [collector.losses[m] for m in sorted(collector.losses)]
        return RunResult(
            plan=plan,
            binding=binding,
            start_step=spec.start_step,
            steps=spec.train.steps,
            losses=losses,
            # The one definition (runtime/throughput.py); 0 when under two mini-batches finished.
            throughput=collector.steady_throughput() or 0.0,
            elapsed_s=final.elapsed_s,
            cost=final.cost,
            busy_s=busy,
            idle_s=idle,
            checkpoint_step=self._checkpoint_step(),
            last_sample=final,
            pids=self._pid_tuple(),
            held_out=list(collector.held_out),
            process_stats=process_stats(self._store, spec),
        )


def launch(
    config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
) -> RunResult:
    """Run a plan to the end (or raise RunError / RunCancelled); the one call most users need."""
    return Launcher(config, sink, cancel).run()
