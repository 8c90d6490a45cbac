"""What `heterps run` prints: the live progress line on stderr, and the summary of a
finished run (JSON, or a few lines of text) with each process's peak memory.
Imported by the command's `run` only, so `heterps --help` loads no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from heterps_core.provenance import ResourceProvenance, from_plan_json
from heterps_core.runtime import sync
from heterps_core.runtime.compile import RunConfig
from heterps_core.runtime.metrics import MetricsSample
from heterps_core.runtime.result import FINAL_LOSS_STEPS, RunResult
from heterps_core.runtime.spec import JobSpec
from heterps_core.runtime.throughput import run_summary


def plan_records(path: str) -> dict[str, ResourceProvenance]:
    """The provenance of the plan's types, as `heterps plan --json` wrote it into the plan
    file (none: every stage is compared as a substitute)."""
    return from_plan_json(json.loads(Path(path).read_text()))


def summary(config: RunConfig, result: RunResult, spec: JobSpec, data: str,
            records: Mapping[str, ResourceProvenance] | None = None) -> dict[str, Any]:
    """The `--json` summary: the run's figures, the plan's, every process's peak memory;
    `records`: the plan's types' provenance (substitute or like with like)."""
    plan, train = config.plan, config.train
    out = {
        "steps": result.steps,
        "start_step": result.start_step,
        "throughput": result.throughput,
        "predicted_throughput": plan.throughput,
        "flushed_throughput": plan.flushed_throughput,
        "sync": train.sync,
        "micro_batches": train.micro_batches,
        "ps_shards": config.ps_shards,
        "cost_model": plan.cost_model,
        "loss": result.final_loss,
        "cost": result.cost,
        "cost_per_hour": plan.cost_per_hour,
        "elapsed_s": result.elapsed_s,
        "binding": full_binding(result.binding, spec),
        "checkpoint_step": result.checkpoint_step,
        "data": data,
        "held_out": result.held_out,  # every evaluation: step, samples, logloss, auc
        "optimizer": train.optimizer,
        # every process: its role, resource type, binding, peak resident memory (a shard's
        # rows)
        "processes": process_rows(spec, result.process_stats),
    }
    # The one measured definition, stages next to the plan, the plan as it ran.
    out.update(run_summary(result, train.batch_size, sync.get(train.sync).flushes, records))
    return out


def summary_lines(config: RunConfig, result: RunResult, spec: JobSpec) -> list[str]:
    """The summary as text: steps, throughput next to the plan's, loss, cost, memory,
    the last held-out evaluation and the last checkpoint."""
    plan, mode = config.plan, config.train.sync
    estimates = [f"plan: {plan.throughput:,.0f}"] if plan.throughput else []
    # A v2 plan's estimate already prices its sync mode; the bound is for v1 plans.
    most = sync.bound(plan, mode) if plan.cost_model != 2 else None
    if estimates and most:
        estimates.append(f"stages taking turns, as {mode} runs them: {most:,.0f}")
    predicted = f" ({'; '.join(estimates)})" if estimates else ""
    loss = result.final_loss
    lines = [
        f"trained steps {result.start_step}..{result.steps} in {result.elapsed_s:.1f} s",
        f"throughput {result.throughput:,.0f} samples/s{predicted}",
        f"loss {loss:.4f} (mean of the last {min(FINAL_LOSS_STEPS, len(result.losses))} steps)"
        if loss is not None
        else "loss -",
        f"cost ${result.cost:.6f} at ${plan.cost_per_hour or 0:.3f} per hour",
        memory_line(process_rows(spec, result.process_stats)),
    ]
    if result.held_out:
        lines.append(held_out_text(result.held_out[-1])
                     + f" ({len(result.held_out)} evaluations)")
    if result.checkpoint_step is not None:
        lines.append(f"checkpoint at step {result.checkpoint_step} in {config.checkpoint_dir}")
    return lines


def process_rows(
    spec: JobSpec, stats: Mapping[int, Mapping[str, object]]
) -> list[dict[str, object]]:
    """Every process: its role, the resource type it runs as and the target it is bound to,
    its peak resident memory (and a server shard's rows held)."""
    rows = []
    for rank in spec.ranks:
        role = (f"ps shard {rank.replica}" if rank.role == "ps"
                else f"stage {rank.stage + 1} replica {rank.replica}")
        entry: dict[str, object] = {
            "rank": rank.rank, "role": role,
            # A shard of a plan that places no server runs as no type: null.
            "resource": rank.resource or None, "binding": rank.target,
            "process": rank.describe(),
            # A shard served inside a stage's process (its memory is in that process's).
            "in_process": rank.host >= 0,
        }
        entry.update(stats.get(rank.rank, {}))
        rows.append(entry)
    return rows


def full_binding(stages: Mapping[str, str], spec: JobSpec) -> dict[str, str]:
    """resource type -> target of every type the run used: the stages' (as recorded), then
    the parameter-server shards' type (the target its shards ran on)."""
    out = dict(stages)
    for rank in spec.ranks:
        if rank.role == "ps" and rank.resource:
            out.setdefault(rank.resource, rank.target)
    return out


def memory_line(rows: list[dict[str, object]]) -> str:
    parts = []
    total = 0.0
    for row in rows:
        peak = row.get("peak_rss_bytes")
        if row.get("in_process"):
            parts.append(f"{row['process']}: {row.get('rows_held', 0):,} rows")
            continue
        if not isinstance(peak, int | float):
            parts.append(f"{row['process']}: not reported")
            continue
        total += peak
        held = row.get("rows_held")
        extra = f", {held:,} rows" if isinstance(held, int) else ""
        parts.append(f"{row['process']}: {peak / 1e9:.2f} GB{extra}")
    return "peak resident memory: " + "; ".join(parts) + f"; all: {total / 1e9:.2f} GB"


def held_out_text(held: dict[str, Any]) -> str:
    auc = "-" if held["auc"] is None else f"{held['auc']:.4f}"
    return (f"held-out logloss {held['logloss']:.4f} AUC {auc} "
            f"({held['samples']} samples, after step {held['step']})")


class ProgressLine:
    """One live line on a terminal; one line per sample elsewhere (logs, CI)."""

    LOG_EVERY_S = 5.0

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self._logged_at = -self.LOG_EVERY_S

    def __call__(self, sample: MetricsSample) -> None:
        loss = "-" if sample.loss is None else f"{sample.loss:.4f}"
        busy = "/".join(f"{s.busy_fraction:.0%}" for s in sample.stages)
        text = (
            f"step {sample.step}/{sample.total_steps}  {sample.samples_per_s:,.0f} samples/s  "
            f"loss {loss}  busy {busy}  ${sample.cost:.6f}"
        )
        if sample.held_out:
            text += "  " + held_out_text(sample.held_out)
        if self.live:
            self.stream.write("\r" + text.ljust(79))
        elif sample.final or sample.elapsed_s - self._logged_at >= self.LOG_EVERY_S:
            self.stream.write(text + "\n")
            self._logged_at = sample.elapsed_s
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
