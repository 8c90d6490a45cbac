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

from heterps_core.plan import Plan
from heterps_core.provenance import UNKNOWN, ResourceProvenance
from heterps_core.runtime.result import RunResult


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


def is_substitute(record: ResourceProvenance | None, target: str, ran_on: str) -> bool:
    """Whether a stage's measured time is of other hardware than its resource type's
    figures, so the two must not be compared: True unless every figure of the type was
    measured (on this host, by an agent, or in a run) on the machine the stage ran on
    (`ran_on`, a `provenance.this_host()` identity) and on the device class of its binding
    `target` (a CPU figure for `cpu`/`remote`, a CUDA one for `cuda:N`/`remote:cuda`).
    Estimated, given or unknown figures, a machine not recorded on either side, another
    machine or another device: a substitute. Names never count: `c6i` made from the
    catalogue's `cpu-c6i.8xlarge` and bound to this CPU is the roofline for a c6i, not this
    machine."""
    where = (record or UNKNOWN).measured_on
    if where is None or not ran_on:
        return True
    host, device = where
    return host != ran_on or device != device_of(target)


def device_of(target: str) -> str:
    """The device class a binding target runs on: 'cuda' or 'cpu'."""
    head, _, tail = target.strip().partition(":")
    return "cuda" if head == "cuda" or (head == "remote" and tail == "cuda") else "cpu"


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
    substitute: bool = True  # like with like only when provenance says so (is_substitute)
    host: str = ""  # the machine it ran on (provenance.this_host()); "": not known

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
            "bound_to": self.bound_to, "host": self.host, "substitute": self.substitute,
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
    records: Mapping[str, ResourceProvenance] | None = None,
    hosts: Mapping[int, str] | None = None,
) -> list[StageMeasure]:
    """Each stage's run totals next to the plan's per-unit time (stages 1-based), and
    whether it ran on a substitute: by `records` (each type's provenance; a type without
    one is unknown) and `hosts` (stage -> the machine it ran on)."""
    records, hosts = records or {}, hosts or {}
    out = []
    for i, stage in enumerate(plan.stages, start=1):
        target = binding.get(stage.resource, "cpu")
        host = hosts.get(i, "")
        out.append(StageMeasure(
            stage=i, resource=stage.resource, units=stage.units or 1, bound_to=target,
            busy_s=busy.get(i, 0.0), idle_s=idle.get(i, 0.0), batches=batches,
            predicted_time_per_batch_s=stage.time_per_batch_s,
            substitute=is_substitute(records.get(stage.resource), target, host), host=host,
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
    result: RunResult, batch_size: int, flushes: bool,
    records: Mapping[str, ResourceProvenance] | None = None,
) -> dict[str, Any]:
    """What a finished run measured, in the CLI's `--json` names (the web app stores the same):
    the measured throughput and how it is defined, start-up, each stage next to the plan
    (a substitute or not by `records`, the plan's types' provenance, and where each stage
    ran), and the plan re-evaluated with the stage times of what ran."""
    plan = result.plan
    batches = len(result.losses)
    last = result.last_sample
    measures = stage_measures(plan, result.binding, result.busy_s, result.idle_s, batches,
                              records, result.stage_hosts)
    as_run = predicted_as_run(plan, measures, batch_size, flushes)
    substitutes = [f"stage {m.stage} ({m.resource}) ran on {m.bound_to}"
                   for m in measures if m.substitute]
    notes = [as_run.note]
    if substitutes:
        notes.append("substitute hardware: " + "; ".join(substitutes) + ": the plan's "
                     "prediction is not for hardware measured where it ran (its figures are "
                     "estimated, of another machine, or of unknown provenance); compare "
                     "with predicted_throughput_as_run")
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

