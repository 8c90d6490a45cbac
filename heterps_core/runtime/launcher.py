"""The launcher: turns a plan into processes, supervises them, and reports what they achieve.

One OS process per stage replica plus the parameter-server shards, all joined through a
torch.distributed TCPStore held here. Local ranks are child processes (they die with the
launcher: PR_SET_PDEATHSIG); ranks bound to `remote` go to worker agents that joined the
same store (see agent.py and docs/operations.md). The launcher polls the children, the
store's metric chunks, the cancel hook and the agents' exit reports every few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import torch
import torch.distributed as dist

from heterps_core.plan import Plan
from heterps_core.runtime import checkpoint, sync
from heterps_core.runtime.binding import Target, parse_target
from heterps_core.runtime.errors import RunCancelled, RunConfigError, RunError
from heterps_core.runtime.metrics import Collector, MetricsSample, MetricsSink, no_metrics
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.ps import sparse_tables
from heterps_core.runtime.spec import (
    JobSpec,
    RankSpec,
    StageSpec,
    TrainSettings,
    backend_for,
    layout,
    stages_from_plan,
)
from heterps_core.runtime.store import serve
from heterps_core.zoo.base import ChainModel

POLL_S = 0.02
STOP_GRACE_S = 2.0
CancelHook = threading.Event | Callable[[], bool]
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class RunConfig:
    plan: Plan
    train: TrainSettings
    binding: dict[str, Target] = field(default_factory=dict)  # missing types: local cpu
    ps_shards: int = 1  # ignored (0) when the model has no sparse tables
    checkpoint_dir: str | None = None
    checkpoint_every: int | None = None
    resume: bool = False
    host: str = "127.0.0.1"  # where agents reach the store; 0.0.0.0 to accept other machines
    port: int = 0
    agent_timeout_s: float = 60.0
    report_interval_s: float = 0.5
    log_dir: str | None = None


@dataclass(frozen=True)
class RunResult:
    plan: Plan  # with the binding recorded in its notes
    binding: dict[str, str]
    start_step: int
    steps: int
    losses: list[float]  # loss of every mini-batch from start_step on
    throughput: float  # steady samples/s (first to last finished mini-batch)
    elapsed_s: float
    cost: float
    busy_s: dict[int, float]
    idle_s: dict[int, float]
    checkpoint_step: int | None
    last_sample: MetricsSample | None
    pids: tuple[int, ...]


class Launcher:
    """`start()` then `wait()` (or `run()`); `pids` lists the local processes for supervision."""

    def __init__(
        self, config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
    ) -> None:
        self.config = config
        self.sink = sink
        self._cancel = cancel
        self.spec = self._build_spec()
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._logs: dict[int, IO[bytes]] = {}
        self._exited: dict[int, int] = {}
        self._store: dist.TCPStore | None = None
        self.log_dir = Path(config.log_dir or tempfile.mkdtemp(prefix="heterps-run-"))
        self.address = ""

    # --- set-up ------------------------------------------------------------------------------

    def _build_spec(self) -> JobSpec:
        cfg, train = self.config, self.config.train
        stages = stages_from_plan(cfg.plan)
        sync.get(train.sync)  # unknown modes fail here, not in a worker
        model = _chain(train)
        _check_chain(stages, model, train)
        if cfg.ps_shards < 1:
            raise RunConfigError("ps_shards", f"must be at least 1, got {cfg.ps_shards}")
        ranks = layout(stages, _checked_binding(cfg, stages), cfg.ps_shards)
        if not sparse_tables(model):
            ranks = tuple(r for r in ranks if r.role != "ps")
        spec = JobSpec(
            train=train,
            stages=stages,
            ranks=ranks,
            ps_shards=sum(r.role == "ps" for r in ranks),
            checkpoint_dir=cfg.checkpoint_dir,
            checkpoint_every=cfg.checkpoint_every,
            backend=backend_for(ranks),
            report_interval_s=cfg.report_interval_s,
        )
        _check_rounds(spec, cfg.checkpoint_every)
        return replace(spec, start_step=_start_step(spec, cfg))

    @property
    def pids(self) -> dict[int, int]:
        return {rank: proc.pid for rank, proc in self._procs.items()}

    def start(self) -> None:
        cfg = self.config
        self._store = serve(cfg.host, cfg.port)
        host = "127.0.0.1" if cfg.host in ("0.0.0.0", "") else cfg.host
        self.address = f"{host}:{self._store.port}"
        self._store.set("job/spec", self.spec.to_json())
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for rank in self.spec.ranks:
            if not _is_remote(rank):
                self._spawn(rank)

    def _spawn(self, rank: RankSpec) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", str(parse_target(rank.target).threads))
        # Every mini-batch allocates the same large activations; glibc would hand each back
        # to the kernel and page-fault it in again (about 6% of a CPU stage's time).
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 30))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1 << 32))
        if self.config.host in ("127.0.0.1", "localhost"):
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        log = open(self.log_dir / f"rank{rank.rank}.log", "wb")  # noqa: SIM115 closed in _close
        self._logs[rank.rank] = log
        self._procs[rank.rank] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heterps_core.runtime.worker",
                "--store",
                self.address,
                "--rank",
                str(rank.rank),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent,
        )

    # --- supervision -------------------------------------------------------------------------

    def run(self) -> RunResult:
        self.start()
        return self.wait()

    def wait(self) -> RunResult:
        assert self._store is not None, "start() first"
        store, spec = self._store, self.spec
        collector = Collector(store, spec, self.config.plan.cost_per_hour or 0.0, self.sink)
        remote = [r for r in spec.ranks if _is_remote(r)]
        assigned = not remote
        deadline = time.monotonic() + self.config.agent_timeout_s
        last_emit = time.monotonic()
        try:
            while len(self._exited) < spec.world_size:
                if not assigned:
                    assigned = self._assign_agents(remote)
                    if not assigned and time.monotonic() > deadline:
                        needed = sorted({spec.stages[r.stage].resource for r in remote})
                        raise RunError(
                            f"no worker agent for {', '.join(needed)} joined within "
                            f"{self.config.agent_timeout_s:g} s (coordinator {self.address})",
                            self._pid_tuple(),
                        )
                self._check_exits()
                collector.poll()
                if self._cancelled():
                    raise RunCancelled(collector.step, self._checkpoint_step(), self._pid_tuple())
                if time.monotonic() - last_emit >= self.config.report_interval_s:
                    collector.emit()
                    last_emit = time.monotonic()
                    self._prune()
                time.sleep(POLL_S)
            collector.poll()
            final = collector.emit(final=True)
        finally:
            self._stop_all()
        return self._result(collector, final)

    def _check_exits(self) -> None:
        assert self._store is not None
        failed: list[int] = []
        for rank, proc in self._procs.items():
            if rank not in self._exited and (code := proc.poll()) is not None:
                self._exited[rank] = code
                failed += [rank] if code != 0 else []
        for remote in self.spec.ranks:
            key = f"exit/{remote.rank}"
            if remote.rank in self._exited or not _is_remote(remote):
                continue
            if self._store.check([key]):
                code = int(self._store.get(key))
                self._exited[remote.rank] = code
                failed += [remote.rank] if code != 0 else []
        if failed:
            self._fail(failed)

    def _fail(self, failed: list[int]) -> None:
        # Peers of a dead process fail soon after it with connection errors: wait a moment,
        # then blame a process killed by a signal, or else the first one seen.
        time.sleep(0.2)
        self._stop_all()
        killed = [r for r in failed if self._exited[r] < 0]
        culprit = (killed or failed)[0]
        others = sum(1 for r, c in self._exited.items() if c != 0 and r != culprit)
        message = f"{self.spec.ranks[culprit].describe()} {_exit_text(self._exited[culprit])}"
        detail = self._error_text(culprit)
        if detail:
            message += f": {detail}"
        if others:
            message += f" ({others} other process{'es' if others > 1 else ''} stopped after it)"
        step = self._checkpoint_step()
        message += f"; last complete checkpoint: step {step}" if step else ""
        raise RunError(message, self._pid_tuple())

    def _error_text(self, rank: int) -> str:
        assert self._store is not None
        if self._store.check([f"error/{rank}"]):
            return self._store.get(f"error/{rank}").decode()
        log = self.log_dir / f"rank{rank}.log"
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        return lines[-1] if lines else ""

    def _cancelled(self) -> bool:
        hook = self._cancel
        if hook is None:
            return False
        return hook.is_set() if isinstance(hook, threading.Event) else bool(hook())

    def _stop_all(self) -> None:
        if self._store is not None:
            self._store.set("control/stop", "1")
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for rank, proc in self._procs.items():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self._exited.setdefault(rank, proc.returncode)
        for log in self._logs.values():
            log.close()

    def _checkpoint_step(self) -> int | None:
        if self.spec.checkpoint_dir is None:
            return None
        return checkpoint.latest_complete(self.spec.checkpoint_dir, self.spec.world_size)

    def _prune(self) -> None:
        if self.spec.checkpoint_dir is not None:
            checkpoint.prune(self.spec.checkpoint_dir, self.spec.world_size)

    def _pid_tuple(self) -> tuple[int, ...]:
        return tuple(self.pids.values())

    # --- agents ------------------------------------------------------------------------------

    def _assign_agents(self, remote: list[RankSpec]) -> bool:
        """Once agents cover every remote resource type, give each its ranks (round-robin)."""
        assert self._store is not None
        store = self._store
        joined = int(store.add("agents/joined", 0))
        agents = [
            json.loads(store.get(f"agents/{i}"))
            for i in range(joined)
            if store.check([f"agents/{i}"])
        ]
        by_type: dict[str, list[int]] = {}
        for i, agent in enumerate(agents):
            for resource in agent["provides"]:
                by_type.setdefault(resource, []).append(i)
        needed = {self.spec.stages[r.stage].resource for r in remote}
        if not needed <= by_type.keys():
            return False
        plan: dict[int, list[int]] = {i: [] for i in range(len(agents))}
        for n, rank in enumerate(remote):
            hosts = by_type[self.spec.stages[rank.stage].resource]
            plan[hosts[n % len(hosts)]].append(rank.rank)
        for i, ranks in plan.items():
            store.set(f"agents/{i}/ranks", json.dumps(ranks))
        return True

    # --- the result --------------------------------------------------------------------------

    def _result(self, collector: Collector, final: MetricsSample) -> RunResult:
        spec, cfg = self.spec, self.config
        binding = {s.resource: str(cfg.binding.get(s.resource, Target("cpu"))) for s in spec.stages}
        plan = cfg.plan.with_notes("binding: " + ",".join(f"{k}={v}" for k, v in binding.items()))
        busy, idle = collector.totals()
        losses = [collector.losses[m] for m in sorted(collector.losses)]
        return RunResult(
            plan=plan,
            binding=binding,
            start_step=spec.start_step,
            steps=spec.train.steps,
            losses=losses,
            throughput=collector.steady_throughput() or final.samples_per_s,
            elapsed_s=final.elapsed_s,
            cost=final.cost,
            busy_s=busy,
            idle_s=idle,
            checkpoint_step=self._checkpoint_step(),
            last_sample=final,
            pids=self._pid_tuple(),
        )


def launch(
    config: RunConfig, sink: MetricsSink = no_metrics, cancel: CancelHook | None = None
) -> RunResult:
    """Run a plan to the end (or raise RunError / RunCancelled); the one call most users need."""
    return Launcher(config, sink, cancel).run()


def _chain(train: TrainSettings) -> ChainModel:
    """The model's layer chain and tables, built on the meta device (nothing allocated)."""
    zoo = resolve_model(train.model)
    try:
        model_config = zoo.config(train.size)
    except KeyError:
        raise RunConfigError("size", f"model {train.model!r} has no size {train.size!r}") from None
    with torch.device("meta"):
        return zoo.build(model_config, seed=train.seed)


def _check_chain(stages: tuple[StageSpec, ...], model: ChainModel, train: TrainSettings) -> None:
    if stages[-1].last != len(model.layers) - 1:
        raise RunConfigError(
            "plan",
            f"covers {stages[-1].last + 1} layers, model {train.model!r} has "
            f"{len(model.layers)}; plan it from this model's instance",
        )
    if train.steps < 1:
        raise RunConfigError("steps", f"must be at least 1, got {train.steps}")
    if not 1 <= train.micro_batches <= train.batch_size:
        raise RunConfigError(
            "micro_batches", f"must be in 1..batch size, got {train.micro_batches}"
        )


def _checked_binding(cfg: RunConfig, stages: tuple[StageSpec, ...]) -> dict[str, Target]:
    binding = {s.resource: cfg.binding.get(s.resource, Target("cpu")) for s in stages}
    for resource, target in binding.items():
        if target.kind == "cuda" and not torch.cuda.is_available():
            raise RunConfigError(f"bind.{resource}", f"{target} but this machine has no GPU")
    return binding


def _check_rounds(spec: JobSpec, checkpoint_every: int | None) -> None:
    rounds = spec.round_steps
    if spec.train.steps % rounds:
        raise RunConfigError(
            "steps",
            f"must be a multiple of {rounds} (every stage's replicas finish whole "
            f"rounds of mini-batches), got {spec.train.steps}",
        )
    if checkpoint_every is not None and (checkpoint_every < 1 or checkpoint_every % rounds):
        raise RunConfigError(
            "checkpoint_every", f"must be a positive multiple of {rounds}, got {checkpoint_every}"
        )


def _start_step(spec: JobSpec, cfg: RunConfig) -> int:
    """0, or the newest complete checkpoint's step when resuming."""
    if cfg.checkpoint_dir is None:
        if cfg.resume:
            raise RunConfigError("resume", "needs a checkpoint directory")
        return 0
    checkpoint.check_job(cfg.checkpoint_dir, _fingerprint(spec))
    if not cfg.resume:
        return 0
    start = checkpoint.latest_complete(cfg.checkpoint_dir, spec.world_size) or 0
    if start >= spec.train.steps:
        raise RunConfigError("steps", f"the checkpoint is already at step {start}; ask for more")
    return start


def _fingerprint(spec: JobSpec) -> dict[str, Any]:
    train = spec.train
    return {
        "model": train.model,
        "size": train.size,
        "seed": train.seed,
        "batch_size": train.batch_size,
        "micro_batches": train.micro_batches,
        "lr": train.lr,
        "sync": train.sync,
        "ps_shards": spec.ps_shards,
        "stages": [[s.first, s.last, s.resource, s.units] for s in spec.stages],
    }


def _is_remote(rank: RankSpec) -> bool:
    return rank.target.startswith("remote")


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            return f"was killed by signal {-code} (exit code {code})"
    return f"exited with code {code}"


def _die_with_parent() -> None:
    # Linux: the child gets SIGKILL when the launcher dies, so no job outlives its launcher.
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
