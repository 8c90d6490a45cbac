"""A run's metrics as values: per-stage figures, the sample a sink receives, the sink type.

Produced by the launcher's `Collector` (metrics.py) from what the workers report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heterps_core.progress import Progress, ProgressCallback, no_progress


@dataclass(frozen=True)
class StageMetrics:
    """One stage over the last window, summed over its replicas."""

    stage: int  # 1-based, as people count stages
    resource: str
    units: int
    busy_s: float
    idle_s: float
    # Since the run's start (after start-up), summed over replicas: what the stage table's
    # busy share and time per mini-batch are, live and final.
    busy_total_s: float = 0.0
    idle_total_s: float = 0.0
    batches: int = 0  # mini-batches finished by the run so far
    predicted_time_per_batch_s: float | None = None  # the plan's, one unit

    @property
    def busy_fraction(self) -> float:
        """Busy share of the last window."""
        total = self.busy_s + self.idle_s
        return self.busy_s / total if total > 0 else 0.0

    @property
    def busy_share(self) -> float | None:
        """Busy share since the run's start."""
        total = self.busy_total_s + self.idle_total_s
        return self.busy_total_s / total if total > 0 else None

    @property
    def time_per_batch_s(self) -> float | None:
        """Measured busy seconds of one unit per mini-batch, since the run's start."""
        return self.busy_total_s / self.batches if self.batches else None


@dataclass(frozen=True)
class MetricsSample:
    """What a run has done so far. `samples_per_s`, `loss` and the stages' busy/idle seconds
    cover the last window (`window_s`: the labelled live figure); `run_samples_per_s` is the
    run's measured throughput (`throughput.run_throughput`: first to last finished
    mini-batch, start-up excluded and shown as `startup_s`)."""

    step: int
    total_steps: int
    elapsed_s: float
    samples_per_s: float
    loss: float | None
    stages: tuple[StageMetrics, ...]
    cost: float  # accrued dollars: units x price x elapsed
    cost_per_hour: float
    final: bool = False
    window_s: float = 0.0
    run_samples_per_s: float | None = None
    span_s: float = 0.0
    startup_s: float | None = None
    # The latest held-out evaluation: {"step", "samples", "logloss", "auc"} (None: none yet).
    held_out: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "total_steps": self.total_steps,
            "elapsed_s": self.elapsed_s,
            "samples_per_s": self.samples_per_s,
            "loss": self.loss,
            "cost": self.cost,
            "cost_per_hour": self.cost_per_hour,
            "final": self.final,
            "window_s": self.window_s,
            "run_samples_per_s": self.run_samples_per_s,
            "span_s": self.span_s,
            "startup_s": self.startup_s,
            "held_out": self.held_out,
            "stages": [
                {
                    "stage": s.stage,
                    "resource": s.resource,
                    "units": s.units,
                    "busy_s": s.busy_s,
                    "idle_s": s.idle_s,
                    "busy_fraction": s.busy_fraction,
                    "busy_total_s": s.busy_total_s,
                    "idle_total_s": s.idle_total_s,
                    "busy_share": s.busy_share,
                    "time_per_batch_s": s.time_per_batch_s,
                    "predicted_time_per_batch_s": s.predicted_time_per_batch_s,
                }
                for s in self.stages
            ],
        }


# The one callback interface for metrics: the CLI's progress line, the Celery task, tests.
MetricsSink = Callable[[MetricsSample], None]
no_metrics: MetricsSink = no_progress  # the default sink: keep nothing


def progress_sink(callback: ProgressCallback) -> MetricsSink:
    """Adapts the metrics stream to the project's one progress interface."""

    def sink(sample: MetricsSample) -> None:
        loss = "-" if sample.loss is None else f"{sample.loss:.4f}"
        callback(
            Progress(
                sample.step,
                sample.total_steps,
                f"{sample.samples_per_s:,.0f} samples/s  loss {loss}  ${sample.cost:.4f}",
                sample.to_dict(),
            )
        )

    return sink
