"""The job spec: everything every process of one run must agree on, as JSON.

The launcher writes it into the rendezvous store; each worker (local, or started by an
agent on another machine) reads it from there, so no process needs the plan file.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from heterps_core.plan import Plan
from heterps_core.runtime.binding import Target, parse_target
from heterps_core.runtime.errors import RunConfigError

# What every rank's process runs, started by the launcher or by an agent:
# `python -m WORKER_MODULE --store HOST:PORT --rank R [--device D]`.
WORKER_MODULE = "heterps_core.runtime.worker"


@dataclass(frozen=True)
class StageSpec:
    first: int
    last: int
    resource: str
    units: int


@dataclass(frozen=True)
class RankSpec:
    """One OS process: a stage replica, or a parameter-server shard (`stage` is -1)."""

    rank: int
    role: str  # "stage" or "ps"
    stage: int = -1
    replica: int = 0
    target: str = "cpu"
    # The resource type it runs on: its stage's, or for a shard the plan's server resource
    # ("" when the plan places no server: the shards run at the coordinator). Agents are
    # handed the remote ranks of the types they provide.
    resource: str = ""
    # A shard served inside the process of stage rank `host` (assignment.in_process_shards);
    # -1: a process of its own. Either way it keeps its rank: its checkpoint part, its stats.
    host: int = -1
    # Intra-op threads the compile step sized it to (runtime/threads.py); 0: its target's.
    threads: int = 0
    # Mini-batches its input thread makes ahead, sized with the threads (threads.input_ahead);
    # None: not sized here (a remote rank), datasource.AHEAD.
    ahead: int | None = None

    def describe(self) -> str:
        if self.role == "ps":
            inside = f", in rank {self.host}'s process" if self.host >= 0 else ""
            return f"parameter server shard {self.replica} (rank {self.rank}{inside})"
        return f"stage {self.stage + 1} replica {self.replica} (rank {self.rank})"


@dataclass(frozen=True)
class TrainSettings:
    """How to train: the knobs shared by the runtime and the plain reference loop."""

    model: str
    steps: int
    batch_size: int
    seed: int = 0
    size: str = "small"
    lr: float = 0.05
    micro_batches: int = 1
    sync: str = "bsp"
    # Input (runtime/datasource.py): "" = the model's synthetic stream, "criteo:PATH" a file;
    # every `eval_every` mini-batches (0 = never) the held-out `eval_samples` are evaluated.
    data: str = ""
    eval_every: int = 0
    eval_samples: int = 0
    # Dense layers' optimiser (heterps_core.ps.optim: sgd, adagrad, adam) with `lr`; sparse
    # tables use `sparse_optimizer` (NAME[:lr=X,eps=Y]) or, when empty, the same with `lr`;
    # `table_optimizers` maps a table's number to its own setting.
    optimizer: str = "sgd"
    sparse_optimizer: str = ""
    table_optimizers: dict[str, str] = field(default_factory=dict)
    evict_after: int | None = None  # server drops rows untouched for this many updates
    # Async only (ps/cache.py): each stage replica caches up to `cache_rows` hot rows per
    # table, read for at most `cache_staleness` rounds after they were pulled (0 = off).
    cache_rows: int = 0
    cache_staleness: int = 0

    def table_optimizer(self, table: int) -> str:
        """Sparse table `table`'s optimiser setting, NAME[:lr=X,eps=Y]."""
        own = self.table_optimizers.get(str(table))
        return own or self.sparse_optimizer or f"{self.optimizer}:lr={self.lr}"


@dataclass(frozen=True)
class SkippedStep:
    """A checkpoint newer than the one a resume starts from, and why it was passed over
    (`damaged`: sealed, yet a part fails its manifest; else it was never sealed)."""

    step: int
    why: str
    damaged: bool = False


@dataclass(frozen=True)
class JobSpec:
    train: TrainSettings
    stages: tuple[StageSpec, ...]
    ranks: tuple[RankSpec, ...]
    ps_shards: int
    start_step: int = 0
    checkpoint_dir: str | None = None
    checkpoint_every: int | None = None
    backend: str = "gloo"
    report_interval_s: float = 0.5
    extra: dict[str, Any] = field(default_factory=dict)
    # One launch of the job (fresh per Launcher): a step is sealed only from the parts this
    # attempt wrote (checkpoint.py); newer steps a resume passed over, newest first.
    attempt: str = ""
    resume_skipped: tuple[SkippedStep, ...] = ()

    @property
    def world_size(self) -> int:
        """Ranks: every stage replica and shard (each writes one part of a checkpoint)."""
        return len(self.ranks)

    @property
    def processes(self) -> tuple[RankSpec, ...]:
        """The ranks that run as processes of their own (the process group's members): all
        but the shards served inside a stage's process, which come last (`layout`)."""
        return tuple(r for r in self.ranks if r.host < 0)

    def hosted_shards(self, rank: int) -> list[RankSpec]:
        """The shards served inside rank `rank`'s process."""
        return [r for r in self.ranks if r.host == rank]

    @property
    def round_steps(self) -> int:
        """Mini-batches in which every stage completes whole rounds (lcm of replica counts)."""
        return math.lcm(*(s.units for s in self.stages))

    def stage_ranks(self, stage: int) -> list[int]:
        return [r.rank for r in self.ranks if r.role == "stage" and r.stage == stage]

    def ps_ranks(self) -> list[int]:
        return [r.rank for r in self.ranks if r.role == "ps"]

    def replica_rank(self, stage: int, mini_batch: int) -> int:
        """The replica of `stage` that handles mini-batch m: m mod k (HeterPS routing)."""
        ranks = self.stage_ranks(stage)
        return ranks[mini_batch % len(ranks)]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        data = json.loads(text)
        return cls(
            train=TrainSettings(**data["train"]),
            stages=tuple(StageSpec(**s) for s in data["stages"]),
            ranks=tuple(RankSpec(**r) for r in data["ranks"]),
            ps_shards=data["ps_shards"],
            start_step=data["start_step"],
            checkpoint_dir=data["checkpoint_dir"],
            checkpoint_every=data["checkpoint_every"],
            backend=data["backend"],
            report_interval_s=data["report_interval_s"],
            extra=data["extra"],
            attempt=data.get("attempt", ""),
            resume_skipped=tuple(SkippedStep(**s) for s in data.get("resume_skipped", ())),
        )


def stages_from_plan(plan: Plan) -> tuple[StageSpec, ...]:
    if not plan.feasible or not plan.stages:
        raise RunConfigError(
            "plan", f"is not feasible ({plan.reason or 'no stages'}); nothing to run"
        )
    stages = []
    for i, stage in enumerate(plan.stages):
        if not stage.units:
            raise RunConfigError(f"plan.stages[{i}].units", "has no unit count")
        stages.append(StageSpec(stage.first, stage.last, stage.resource, stage.units))
    return tuple(stages)


def layout(
    stages: tuple[StageSpec, ...], binding: dict[str, Target], ps_shards: int,
    ps_target: str = "cpu", ps_resource: str = "",
) -> tuple[RankSpec, ...]:
    """Ranks in order: stage 1 replicas, stage 2 replicas, ..., then parameter-server shards
    (on `ps_target`: the target of `ps_resource`, the resource a v2 plan puts them on)."""
    ranks: list[RankSpec] = []
    for s, stage in enumerate(stages):
        if stage.resource not in binding:
            raise RunConfigError(f"bind.{stage.resource}", "the plan uses it but it has no target")
        target = str(binding[stage.resource])
        for replica in range(stage.units):
            ranks.append(RankSpec(len(ranks), "stage", s, replica, target, stage.resource))
    for shard in range(ps_shards):
        ranks.append(RankSpec(len(ranks), "ps", -1, shard, ps_target, ps_resource))
    return tuple(ranks)


def backend_for(ranks: tuple[RankSpec, ...]) -> str:
    # gloo carries CPU tensors (and the parameter server); NCCL only joins when a GPU is bound.
    uses_cuda = any(parse_target(r.target).is_cuda for r in ranks)
    return "cpu:gloo,cuda:nccl" if uses_cuda else "gloo"
