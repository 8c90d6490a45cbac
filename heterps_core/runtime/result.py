"""What a finished run hands back: `RunResult` (losses, measured throughput, cost, busy and
idle time per stage, the last checkpoint, every held-out evaluation, each process's peak
memory). Below the launcher, so that the figures' readers (throughput.py, the CLI, the web
app) need not import what starts processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.plan import Plan
from heterps_core.runtime.samples import MetricsSample
from heterps_core.runtime.spec import JobSpec

FINAL_LOSS_STEPS = 10  # a run's loss is the mean of its last this many mini-batches


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
    # Every held-out evaluation, in step order: {"step", "samples", "logloss", "auc"}.
    held_out: list[dict[str, Any]] = field(default_factory=list)
    # rank -> what the process reported at its end: peak_rss_bytes (and a server shard's
    # rows_held, table_bytes); ranks that did not report are missing.
    process_stats: dict[int, dict[str, int]] = field(default_factory=dict)
    # stage (1-based) -> the machine its processes ran on (provenance.this_host()); "" when
    # its replicas ran on several machines or one did not say.
    stage_hosts: dict[int, str] = field(default_factory=dict)
    # Every step this run sealed a checkpoint at, in order: the older ones pruned since too
    # (the directory keeps the newest two), so the interval that ran is on record.
    sealed_steps: tuple[int, ...] = ()

    @property
    def final_loss(self) -> float | None:
        """The mean loss of the last FINAL_LOSS_STEPS mini-batches (None before any)."""
        tail = self.losses[-FINAL_LOSS_STEPS:]
        return sum(tail) / len(tail) if tail else None


def stage_hosts(store: dist.Store, spec: JobSpec) -> dict[int, str]:
    """Where each stage ran, as its processes said when they started (`RunResult`)."""
    seen: dict[int, set[str]] = {}
    for rank in spec.ranks:
        if rank.role != "stage":
            continue
        key = keys.where(rank.rank)
        said = json.loads(store.get(key).decode()) if store.check([key]) else {}
        seen.setdefault(rank.stage + 1, set()).add(str(said.get("machine") or ""))
    return {stage: hosts.pop() if len(hosts) == 1 else "" for stage, hosts in seen.items()}


def process_stats(store: dist.Store, spec: JobSpec) -> dict[int, dict[str, int]]:
    """What every process that reported wrote into the store at its end (`RunResult`)."""
    out = {}
    for rank in spec.ranks:
        key = keys.stats(rank.rank)
        if store.check([key]):
            out[rank.rank] = json.loads(store.get(key).decode())
    return out
