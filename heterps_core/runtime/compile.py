"""The compile step: a run config becomes the job spec every process agrees on, or a
`RunConfigError` naming the field. Nothing is started and nothing is written, so the CLI,
the launcher and the web app's approve form all validate a run the same way.

The defaults of a run live here too (micro-batches, whole rounds of steps, where the
coordinator listens), so no caller re-derives them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from heterps_core.plan import Plan
from heterps_core.ps import optim
from heterps_core.runtime import assignment, checkpoint, liveness, sync
from heterps_core.runtime.binding import Target
from heterps_core.runtime.datasource import check_data
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.spec import (
    JobSpec,
    StageSpec,
    TrainSettings,
    backend_for,
    layout,
    stages_from_plan,
)
from heterps_core.runtime.tables import sparse_tables
from heterps_core.runtime.threads import machine_cores, rank_threads, with_threads
from heterps_core.zoo.base import ChainModel

LOCAL_HOST = "127.0.0.1"
ALL_INTERFACES = "0.0.0.0"
STEPS_ABOUT = 40  # the steps offered by default, rounded up to whole rounds


@dataclass(frozen=True)
class RunConfig:
    plan: Plan
    train: TrainSettings
    binding: dict[str, Target] = field(default_factory=dict)  # missing types: local cpu
    ps_shards: int = 1  # ignored (0) when the model has no sparse tables
    checkpoint_dir: str | None = None
    checkpoint_every: int | None = None
    resume: bool = False
    host: str = LOCAL_HOST  # where agents reach the store; 0.0.0.0 to accept other machines
    port: int = 0
    agent_timeout_s: float = 60.0
    # Liveness (runtime/liveness.py): once the run has finished a mini-batch of its own, a
    # job process without a heartbeat for watchdog_s is named as stopped; before, a process
    # still starting startup_timeout_s after its launch is named; a machine (agent) without
    # a heartbeat for heartbeat_timeout_s as lost.
    watchdog_s: float = liveness.WATCHDOG_S
    startup_timeout_s: float = liveness.STARTUP_TIMEOUT_S
    heartbeat_timeout_s: float = liveness.AGENT_TIMEOUT_S
    report_interval_s: float = 0.5
    log_dir: str | None = None


def default_micro_batches(stages: int) -> int:
    """One micro-batch for a single stage (nothing to overlap), else four (GPipe-style)."""
    return 1 if stages <= 1 else 4


def coordinator_host(binding: Mapping[str, Target]) -> str:
    """Agents on other machines must reach the store: listen everywhere when any type is remote."""
    return ALL_INTERFACES if any(t.is_remote for t in binding.values()) else LOCAL_HOST


def default_checkpoint_every(steps: int, units: Sequence[int], checkpoints: int = 10) -> int:
    """About `checkpoints` checkpoints over a run (one every tenth of it), in whole rounds:
    what a job started from the web uses, so a lost machine costs at most a tenth."""
    rounds = round_steps(units)
    return rounds * max(1, math.ceil(steps / checkpoints / rounds))


def checkpoint_every(config: RunConfig, units: Sequence[int]) -> int | None:
    """Steps between checkpoints: the config's when it asks; else, with somewhere to write,
    the smallest interval the plan priced for a spot stage (none loses more than it was
    priced for) rounded up to whole rounds; else None (the final checkpoint only)."""
    if config.checkpoint_every is not None or config.checkpoint_dir is None:
        return config.checkpoint_every
    for i, every in enumerate(s.checkpoint_every for s in config.plan.stages):
        if every is not None and (type(every) is not int or every < 1):
            raise RunConfigError(f"plan.stages[{i}].checkpoint_every",
                                 f"must be a positive whole number of steps, got {every!r}")
    asked = [s.checkpoint_every for s in config.plan.stages if s.checkpoint_every is not None]
    rounds = round_steps(units)
    return rounds * math.ceil(min(asked) / rounds) if asked else None


def round_steps(units: Sequence[int]) -> int:
    """Mini-batches in which every stage's replicas finish whole rounds."""
    return math.lcm(*units) if units else 1


def whole_steps(units: Sequence[int], about: int = STEPS_ABOUT) -> int:
    """`about` steps rounded up to whole rounds (what the approve form offers)."""
    rounds = round_steps(units)
    return rounds * math.ceil(about / rounds)


def _server_placement(config: RunConfig) -> tuple[str, str]:
    """(target, resource) of the parameter-server shards: where a v2 plan puts them.

    A server resource bound to `remote` (or `remote:cuda`) sends the shards to agents of
    that type, like stages; one bound to a local CPU target runs them here with its
    threads; no placement (v1 plans) or a GPU binding: one local CPU thread (shards are
    CPU processes)."""
    server = config.plan.parameter_server
    if server is None:
        return "cpu", ""
    target = config.binding.get(server.resource)
    if target is None or target.is_cuda:
        return "cpu", server.resource
    if target.is_remote:
        return "remote", server.resource  # a shard is a CPU process wherever it runs
    return str(target), server.resource


def compile_run(config: RunConfig) -> JobSpec:
    """The job spec of `config`, checked against the model, the plan and this machine."""
    train = config.train
    stages = stages_from_plan(config.plan)
    sync.get(train.sync)  # unknown modes fail here, not in a worker
    model = _chain(train)
    _check_chain(stages, model, train)
    zoo = resolve_model(train.model)
    check_data(train, zoo, zoo.config(train.size))  # a bad file fails here, not in a worker
    _check_optimizers(train, len(sparse_tables(model)))
    if config.ps_shards < 1:
        raise RunConfigError("ps_shards", f"must be at least 1, got {config.ps_shards}")
    binding = checked_binding(config.binding, stages)
    ranks = layout(stages, binding, config.ps_shards, *_server_placement(config))
    if not sparse_tables(model):
        ranks = tuple(r for r in ranks if r.role != "ps")
    spec = JobSpec(
        train=train,
        stages=stages,
        ranks=ranks,
        ps_shards=sum(r.role == "ps" for r in ranks),
        checkpoint_dir=config.checkpoint_dir,
        checkpoint_every=checkpoint_every(config, [s.units for s in stages]),
        backend=backend_for(ranks),
        report_interval_s=config.report_interval_s,
    )
    _check_rounds(spec, config.checkpoint_every)
    spec = assignment.in_process_shards(spec, [ref.layer for ref in sparse_tables(model)])
    # The cores this machine's processes leave idle go to the busiest one (runtime/threads.py).
    cores = machine_cores()
    spec = with_threads(spec, rank_threads(spec.ranks, config.plan, train.sync, cores), cores)
    resume = _resume_from(spec, config)
    return replace(spec, start_step=resume.step, resume_skipped=resume.skipped)


def checked_binding(
    binding: Mapping[str, Target], stages: Sequence[StageSpec]
) -> dict[str, Target]:
    """Every stage's target (unnamed types: one local CPU thread), usable on this machine."""
    checked = {s.resource: binding.get(s.resource, Target("cpu")) for s in stages}
    cores = os.cpu_count() or 1
    for resource, target in checked.items():
        if target.kind == "cuda" and not torch.cuda.is_available():
            raise RunConfigError(f"bind.{resource}", f"{target} but this machine has no GPU")
        if target.kind == "cpu" and target.threads > cores:
            raise RunConfigError(
                f"bind.{resource}",
                f"{target} asks for {target.threads} threads per unit; this machine has "
                f"{cores} cores",
            )
    return checked


def binding_text(binding: Mapping[str, Target], stages: Sequence[StageSpec]) -> dict[str, str]:
    """resource -> target as text, for every stage (what a run records)."""
    return {s.resource: str(binding.get(s.resource, Target("cpu"))) for s in stages}


def fingerprint(spec: JobSpec) -> dict[str, Any]:
    """What a checkpoint directory must belong to before a run resumes from it."""
    train = spec.train
    return {
        "model": train.model,
        "size": train.size,
        "seed": train.seed,
        "batch_size": train.batch_size,
        "micro_batches": train.micro_batches,
        "lr": train.lr,
        "sync": train.sync,
        "data": train.data,
        "optimizer": train.optimizer,
        "sparse_optimizer": train.sparse_optimizer,
        "table_optimizers": dict(train.table_optimizers),
        "ps_shards": spec.ps_shards,
        "stages": [[s.first, s.last, s.resource, s.units] for s in spec.stages],
    }


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


def _check_optimizers(train: TrainSettings, tables: int) -> None:
    """Every optimiser setting parses and names a table the model has (here, not in a
    worker); the dense one is a name only (its learning rate is `lr`)."""
    if ":" in train.optimizer:
        raise RunConfigError("optimizer", "takes a name only; the learning rate is lr")
    settings = [("optimizer", f"{train.optimizer}:lr={train.lr}")]
    if train.sparse_optimizer:
        settings.append(("sparse_optimizer", train.sparse_optimizer))
    for table, text in train.table_optimizers.items():
        if not table.isdigit() or int(table) >= tables:
            raise RunConfigError(
                "table_optimizers", f"the model has tables 0..{tables - 1}, got {table!r}"
            )
        settings.append((f"table_optimizers.{table}", text))
    for name, text in settings:
        try:
            optim.parse(text, name)
        except optim.InvalidOptimizerError as exc:
            raise RunConfigError(name, str(exc).removeprefix(f"{name}: ")) from None
    if train.evict_after is not None and train.evict_after < 1:
        raise RunConfigError("evict_after", f"must be at least 1, got {train.evict_after}")
    _check_cache(train)


def _check_cache(train: TrainSettings) -> None:
    """The hot-row cache (ps/cache.py) serves stale rows: async runs only, bounds >= 0."""
    if train.cache_rows < 0:
        raise RunConfigError("cache_rows", f"must be 0 (off) or more, got {train.cache_rows}")
    if train.cache_staleness < 0:
        raise RunConfigError(
            "cache_staleness", f"must be 0 or more steps, got {train.cache_staleness}"
        )
    if train.cache_rows and sync.get(train.sync).ps_synchronous:
        raise RunConfigError(
            "cache_rows",
            f"needs an asynchronous sync mode (async): {train.sync} reads every row as "
            "updated, a cache would serve stale ones",
        )


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


def _resume_from(spec: JobSpec, config: RunConfig) -> checkpoint.ResumeFrom:
    """Step 0, or when resuming the newest verified checkpoint's step and the newer ones
    passed over (reads every part of the steps it tries; never writes)."""
    if config.checkpoint_dir is None:
        if config.resume:
            raise RunConfigError("resume", "needs a checkpoint directory")
        return checkpoint.ResumeFrom(0)
    checkpoint.check_location(config.checkpoint_dir)
    checkpoint.refuse_other_job(config.checkpoint_dir, fingerprint(spec))
    if not config.resume:
        return checkpoint.ResumeFrom(0)
    resume = checkpoint.resume_from(config.checkpoint_dir, spec.world_size)
    if resume.step >= spec.train.steps:
        raise RunConfigError(
            "steps", f"the checkpoint is already at step {resume.step}; ask for more")
    return resume
