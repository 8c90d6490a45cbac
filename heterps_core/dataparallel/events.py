"""What a data-parallel run reports while it trains: one frozen dataclass per kind of event.

Every event goes to one `MetricsCallback`; the CLI prints them, a Celery task can store them
and push them to the job page, tests collect them. Times are seconds on the run's clock
(see `emulated.py`: emulated time; with the process backend, wall-clock seconds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from heterps_core.progress import Progress, ProgressCallback, no_progress


@dataclass(frozen=True)
class WorkerProfile:
    """The profiling phase's result for one worker (trimmed means over the measured rounds)."""

    worker: int
    compute_s: float  # one step at the worker's batch size, slowdown included
    comm_s: float  # one dense push (or pull) of the whole model
    slowdown: float
    batch_size: int
    measured_s: float  # this worker's own trimmed mean, before slowdown and pooling


@dataclass(frozen=True)
class ProfileEvent:
    workers: tuple[WorkerProfile, ...]


@dataclass(frozen=True)
class StepEvent:
    """One local training step of one worker."""

    worker: int
    step: int  # this worker's step count, from 1
    global_step: int  # steps of all workers so far
    time_s: float  # when the step ended
    step_time_s: float  # compute time of this step
    loss: float  # training loss of this step's batch
    staleness: int  # rounds this worker is ahead of the slowest one when its round began
    bytes_sent: int  # bytes this worker sent so far (all pushes)
    phase: str  # "AHL" / "SHL" for ASHL, else the mode name
    straggler: bool  # flagged by the straggler detector at this moment
    batch_size: int


@dataclass(frozen=True)
class CommitEvent:
    """A worker's update reached the parameter server (or an all-reduce finished)."""

    worker: int  # -1 for a collective of all workers
    time_s: float
    bytes_sent: int  # bytes of this update, per sending worker
    update_lag: int  # server updates applied between this worker's pull and this push
    staleness: int
    phase: str
    compressed: bool  # sent through the mode's compressor (top-k)


@dataclass(frozen=True)
class EvalEvent:
    """Held-out metrics of the server's parameters."""

    time_s: float
    global_step: int
    loss: float
    auc: float | None
    accuracy: float | None


@dataclass(frozen=True)
class PhaseEvent:
    """ASHL switched from its coarse (AHL) to its fine (SHL) phase."""

    time_s: float
    global_step: int
    previous: str
    phase: str
    reason: str  # "threshold" or "plateau"
    train_loss: float


@dataclass(frozen=True)
class StragglerEvent:
    """The set of flagged workers changed."""

    time_s: float
    flags: tuple[bool, ...]
    z_scores: tuple[float, ...]
    step_times_s: tuple[float, ...]  # rolling median step time per worker


@dataclass(frozen=True)
class RebalanceEvent:
    """DLB: batch shares re-set in proportion to measured speed."""

    time_s: float
    batch_sizes: tuple[int, ...]


TrainEvent = (
    ProfileEvent | StepEvent | CommitEvent | EvalEvent | PhaseEvent | StragglerEvent
    | RebalanceEvent
)
MetricsCallback = Callable[[TrainEvent], None]
no_metrics: MetricsCallback = no_progress  # the default: report nothing


def event_to_dict(event: TrainEvent) -> dict[str, Any]:
    """A JSON-ready dict with the event's kind, e.g. ``{"event": "step", ...}``."""
    kind = type(event).__name__.removesuffix("Event").lower()
    return {"event": kind, **asdict(event)}


def progress_metrics(callback: ProgressCallback, total_steps: int) -> MetricsCallback:
    """Adapts the event stream to the project's one progress interface (one per evaluation)."""

    def forward(event: TrainEvent) -> None:
        if isinstance(event, EvalEvent):
            quality = "" if event.auc is None else f"  AUC {event.auc:.4f}"
            callback(Progress(event.global_step, total_steps,
                              f"t={event.time_s:.3f} s  held-out loss {event.loss:.4f}{quality}",
                              event_to_dict(event)))

    return forward
