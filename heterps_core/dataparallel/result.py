"""What a finished (or cancelled) data-parallel run returns, ready to store with the job."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from heterps_core.dataparallel.events import EvalEvent, PhaseEvent, WorkerProfile


@dataclass
class WorkerSummary:
    worker: int
    slowdown: float
    steps: int = 0
    commits: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    compute_s: float = 0.0  # seconds (emulated, or wall with the process backend) in steps
    wait_s: float = 0.0  # seconds blocked at a barrier or a staleness bound
    max_staleness: int = 0
    batch_size: int = 0

    @property
    def mean_step_time_s(self) -> float:
        return self.compute_s / self.steps if self.steps else 0.0

    @property
    def bytes_sent_per_step(self) -> float:
        return self.bytes_sent / self.steps if self.steps else 0.0


@dataclass
class TrainResult:
    mode: str
    mode_params: dict[str, Any]
    config: dict[str, Any]
    profile: tuple[WorkerProfile, ...]
    workers: list[WorkerSummary]
    evals: list[EvalEvent] = field(default_factory=list)
    switch: PhaseEvent | None = None
    time_s: float = 0.0  # seconds the run lasted on its clock (emulated, or wall)
    global_steps: int = 0
    stopped: str = ""  # duration, max_steps, target or cancelled
    wall_s: float = 0.0  # this machine's seconds, profiling included

    @property
    def cancelled(self) -> bool:
        return self.stopped == "cancelled"

    @property
    def final(self) -> EvalEvent:
        return self.evals[-1]

    def time_to_loss(self, target: float) -> float | None:
        """First evaluation time at which the held-out loss was at or below `target`."""
        return next((e.time_s for e in self.evals if e.loss <= target), None)

    @property
    def bytes_sent(self) -> int:
        return sum(w.bytes_sent for w in self.workers)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for summary, worker in zip(data["workers"], self.workers, strict=True):
            summary["mean_step_time_s"] = worker.mean_step_time_s
            summary["bytes_sent_per_step"] = worker.bytes_sent_per_step
        target = self.config.get("target_loss")
        data["time_to_target_s"] = None if target is None else self.time_to_loss(target)
        return data
