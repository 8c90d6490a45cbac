"""What a run measured, defined once: its throughput, its start-up, each stage's time per
mini-batch and busy share, and the plan re-evaluated with the stage times that ran.

Every page, list, API, CLI and report that shows a run's measured throughput shows
`RunThroughput.per_s` (docs/runtime.md, "Measured throughput"): the samples of the
mini-batches finished after the first one, over the span from the first finished
mini-batch to the last. Start-up (processes starting, the first mini-batch) is outside
the span and shown on its own. A live figure over the last report window is a different
number and is labelled as such.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from heterps_core.hardware.defaults import DEFAULT_KINDS
from heterps_core.plan import Plan
from heterps_core.runtime.result import RunResult

# Resource names that are GPUs (the catalogue's kind is used where it is known).
GPU_WORDS = ("gpu", "cuda", "t4", "v100", "a100", "h100", "h200", "k80", "p100", "l4", "a10")


@dataclass(frozen=True)
class RunThroughput:
    """Finished mini-batches between the first and the last; `per_s` is THE measured figure."""

    samples: int  # of the mini-batches finished after the first (those inside the span)
    span_s: float  # first finished mini-batch to the last
    startup_s: float | None  # run start to the first finished mini-batch (None: none finished)
    batches: int  # mini-batches finished in all

    @property
    def per_s(self) -> float | None:
        return self.samples / self.span_s if self.span_s > 0 and self.samples else None


def run_throughput(
    finish_times: Iterable[float], batch_size: int, started_at: float | None = None
) -> RunThroughput:
    """The run's measured throughput from its mini-batches' finish times (one clock)."""
    meter = ThroughputMeter(started_at)
    for finished_at in finish_times:
        meter.add(finished_at, batch_size)
    return meter.result()


class ThroughputMeter:
    """`run_throughput` kept as mini-batches finish, for runs whose mini-batches differ in
    size (data-parallel workers, rebalanced batches): the same definition, the samples of
    every finished mini-batch but the first one, over the first to the last finish."""

    def __init__(self, started_at: float | None = None) -> None:
        self.started_at = started_at
        self._first: tuple[float, int] | None = None
        self._last = 0.0
        self._samples = 0
        self._batches = 0

    def add(self, finished_at: float, samples: int) -> None:
        if self._first is None or finished_at < self._first[0]:
            self._first = (finished_at, samples)
        self._last = max(self._last, finished_at) if self._batches else finished_at
        self._samples += samples
        self._batches += 1

    def result(self) -> RunThroughput:
        if self._first is None:
            return RunThroughput(0, 0.0, None, 0)
        first, first_samples = self._first
        startup = first - self.started_at if self.started_at is not None else None
        return RunThroughput(
            samples=self._samples - first_samples, span_s=self._last - first,
            startup_s=max(startup, 0.0) if startup is not None else None,
            batches=self._batches,
        )


DEFINITION = ("samples of the mini-batches finished after the first, over the span from "
              "the first finished mini-batch to the last")


def is_gpu(resource: str, kind: str | None = None) -> bool:
    if kind:
        return kind.lower() == "gpu"
    name = resource.lower()
    return any(word in name for word in GPU_WORDS)


# The hardware catalogue's named machines: bound to this machine, they ran on a stand-in.
CATALOGUE_MACHINES = frozenset(kind.name for kind in DEFAULT_KINDS)


def is_substitute(resource: str, target: str, kind: str | None = None) -> bool:
    """Whether the plan's per-stage prediction is for hardware that did not run: a GPU type
    bound to a CPU (or a CPU type to a GPU), or one of the catalogue's named machines
    (cpu-c6i.8xlarge, gpu-t4, ...) bound to this machine instead of to an agent of its type
    (a 32-vCPU c6i on one thread here is not a c6i). A type of one's own bound to this
    machine (local-1 of `--include-local`, a hand-made cpu type) is taken to be this
    machine: its measured numbers are its own."""
    if target.startswith("remote"):
        return is_gpu(resource, kind) != target.endswith("cuda")
    if resource in CATALOGUE_MACHINES:
        return True
    return is_gpu(resource, kind) != target.startswith("cuda")


@dataclass(frozen=True)
class StageMeasure:
    """One stage over the whole run, summed over its replicas."""

    stage: int  # 1-based
    resource: str
    units: int
    bound_to: str
    busy_s: float
    idle_s: float
    batches: int  # mini-batches the stage finished (every replica together)
    predicted_time_per_batch_s: float | None  # the plan's, for one unit
    substitute: bool = False

    @property
    def measured_time_per_batch_s(self) -> float | None:
        """Busy seconds of one unit per mini-batch: replicas' busy time over all mini-batches
        (each replica handles 1/units of them), like the plan's per-unit stage time."""
        return self.busy_s / self.batches if self.batches else None

    @property
    def busy_share(self) -> float | None:
        total = self.busy_s + self.idle_s
        return self.busy_s / total if total > 0 else None

    @property
    def idle_share(self) -> float | None:
        share = self.busy_share
        return None if share is None else 1.0 - share

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage, "resource": self.resource, "units": self.units,
            "bound_to": self.bound_to, "substitute": self.substitute,
            "busy_total_s": self.busy_s, "idle_total_s": self.idle_s, "batches": self.batches,
            "measured_time_per_batch_s": self.measured_time_per_batch_s,
            "predicted_time_per_batch_s": self.predicted_time_per_batch_s,
            "busy_share": self.busy_share, "idle_share": self.idle_share,
        }


def stage_measures(
    plan: Plan,
    binding: Mapping[str, str],
    busy: Mapping[int, float],
    idle: Mapping[int, float],
    batches: int,
    kinds: Mapping[str, str] | None = None,
) -> list[StageMeasure]:
    """Each stage's run totals next to the plan's per-unit time (stages 1-based)."""
    kinds = kinds or {}
    out = []
    for i, stage in enumerate(plan.stages, start=1):
        target = binding.get(stage.resource, "cpu")
        out.append(StageMeasure(
            stage=i, resource=stage.resource, units=stage.units or 1, bound_to=target,
            busy_s=busy.get(i, 0.0), idle_s=idle.get(i, 0.0), batches=batches,
            predicted_time_per_batch_s=stage.time_per_batch_s,
            substitute=is_substitute(stage.resource, target, kinds.get(stage.resource)),
        ))
    return out


@dataclass(frozen=True)
class AsRun:
    """The plan re-evaluated with the stage times of what ran (None: no such profile)."""

    throughput: float | None
    note: str


def predicted_as_run(
    plan: Plan, measures: list[StageMeasure], batch_size: int, flushes: bool
) -> AsRun:
    """The plan's own composition (pipelined minimum, or stages taking turns when the sync
    mode flushes every mini-batch) applied to measured per-unit stage times instead of the
    plan's. It tests the composition, not the per-layer estimates."""
    if not plan.stages or len(measures) != len(plan.stages):
        return AsRun(None, "predicted_throughput_as_run: the plan has no stages to re-evaluate")
    times = [m.measured_time_per_batch_s for m in measures]
    if any(not t for t in times):
        return AsRun(None, "predicted_throughput_as_run: no measured profile of what ran "
                           "(no mini-batch finished, so no stage time was measured)")
    stages = tuple(
        replace(s, time_per_batch_s=t, throughput=(m.units * batch_size / t if t else None))
        for s, m, t in zip(plan.stages, measures, times, strict=True)
    )
    again = replace(plan, stages=stages, throughput=min(s.throughput or 0.0 for s in stages))
    value = again.flushed_throughput if flushes and len(stages) > 1 else again.throughput
    where = ", ".join(f"stage {m.stage} {m.resource} on {m.bound_to}" for m in measures)
    return AsRun(value, f"predicted_throughput_as_run: the plan re-evaluated with the "
                        f"per-unit stage times measured in this run ({where})")


def error(measured: float | None, predicted: float | None) -> float | None:
    """Relative error of a prediction against what was measured (0.1 = 10%)."""
    if not measured or not predicted:
        return None
    return (predicted - measured) / measured


def run_summary(
    result: RunResult, batch_size: int, flushes: bool, kinds: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What a finished run measured, in the CLI's `--json` names (the web app stores the same):
    the measured throughput and how it is defined, start-up, each stage next to the plan, and
    the plan re-evaluated with the stage times of what ran."""
    plan = result.plan
    batches = len(result.losses)
    last = result.last_sample
    measures = stage_measures(plan, result.binding, result.busy_s, result.idle_s, batches, kinds)
    as_run = predicted_as_run(plan, measures, batch_size, flushes)
    substitutes = [f"stage {m.stage} ({m.resource}) ran on {m.bound_to}"
                   for m in measures if m.substitute]
    notes = [as_run.note]
    if substitutes:
        notes.append("substitute hardware: " + "; ".join(substitutes) + ": the plan's "
                     "prediction is for hardware that did not run; compare with "
                     "predicted_throughput_as_run")
    return {
        "throughput": result.throughput or None,
        "throughput_definition": DEFINITION,
        "samples_in_span": max(batches - 1, 0) * batch_size,
        "span_s": last.span_s if last else 0.0,
        "startup_s": last.startup_s if last else None,
        "stages": [m.to_dict() for m in measures],
        "predicted_throughput_as_run": as_run.throughput,
        "error_vs_as_run": error(result.throughput, as_run.throughput),
        "substitutes": substitutes,
        "cost_items": cost_items(result.cost, plan.cost_per_hour or 0.0,
                                 last.startup_s if last else None, last.span_s if last else 0.0),
        "notes": notes,
    }


def cost_items(cost: float, cost_per_hour: float, startup_s: float | None, span_s: float
               ) -> dict[str, float]:
    """A run's accrued $ (every unit held for the run's whole time) by what the time held
    went to: starting (to the first finished mini-batch; all of it when none finished),
    training (first to last finished mini-batch, idle waits included) and stopping."""
    rate = cost_per_hour / 3600
    startup = cost if startup_s is None else min(cost, rate * startup_s)
    training = min(cost - startup, rate * span_s)
    return {"startup_usd": startup, "training_usd": training,
            "stopping_usd": max(cost - startup - training, 0.0)}

