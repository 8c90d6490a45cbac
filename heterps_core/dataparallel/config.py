"""A data-parallel job's settings (everything but the model and the sync mode), validated."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.limits import limit
from heterps_core.ps import optim

# "emulated": one process, discrete-event clock (emulated.py). "process": one OS process per
# worker plus this process as parameter server, on the wall clock (process/). The classes
# are chosen in trainer.BACKEND_CLASSES.
BACKENDS = ("emulated", "process")


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one run. Times are emulated seconds (see `emulated.py`), or wall-clock
    seconds with `backend="process"` (see `process/`).

    `slowdowns[w]` multiplies worker w's measured compute time (emulated heterogeneity);
    empty means all 1.0. The run stops at `duration_s`, after `max_steps` local steps of
    all workers together, or (with `stop_at_target`) once the held-out loss reaches
    `target_loss`, whichever comes first.
    """

    workers: int = 3
    slowdowns: tuple[float, ...] = ()
    batch_size: int = 256  # per worker at the start; the global batch is workers * batch_size
    lr: float = 0.05
    momentum: float = 0.0  # SGD only
    # The optimiser of the dense layers (on each worker) and of the tables (on the parameter
    # server with the process backend, lazily per row), a `heterps_core.ps.optim` name.
    optimizer: str = "sgd"
    duration_s: float = math.inf
    max_steps: int | None = None
    eval_every_s: float = 1.0
    eval_samples: int = 4096
    target_loss: float | None = None
    stop_at_target: bool = False
    bandwidth_gbps: float = 1.0
    latency_s: float = 1e-4
    jitter: float = 0.05  # sigma of the log-normal noise on every step time
    rebalance: bool = False  # DLB batch shares in proportion to measured speed
    rebalance_every_s: float = 1.0
    straggler_window: int = 10
    straggler_z: float = 3.0
    profile_warmup: int = 2
    profile_rounds: int = 8
    # Emulated workers share one host: pool their measurements (median) so that two 1x
    # workers are equally fast and only the injected slowdowns differ. Off for real hardware.
    profile_pool: bool = True
    seed: int = 0
    backend: str = "emulated"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _positive_int("workers", self.workers)
        limit("workers").check(self.workers, "workers", DataParallelError)
        if self.slowdowns and len(self.slowdowns) != self.workers:
            raise DataParallelError("slowdowns", f"needs one factor per worker ({self.workers}), "
                                    f"got {len(self.slowdowns)}")
        for i, s in enumerate(self.slowdowns):
            _positive(f"slowdowns[{i}]", s)
        _positive_int("batch_size", self.batch_size)
        _positive("lr", self.lr)
        _at_least_zero("momentum", self.momentum)
        if self.optimizer not in optim.names():
            raise DataParallelError("optimizer", f"must be one of {', '.join(optim.names())}, "
                                    f"got {self.optimizer!r}")
        if self.momentum and self.optimizer != "sgd":
            raise DataParallelError("momentum", f"applies to sgd only, not {self.optimizer}")
        if not (self.duration_s > 0):
            raise DataParallelError("duration_s", f"must be > 0, got {self.duration_s}")
        if self.max_steps is not None:
            _positive_int("max_steps", self.max_steps)
        if math.isinf(self.duration_s) and self.max_steps is None:
            raise DataParallelError("duration_s", "set it or max_steps, or the run never ends")
        _positive("eval_every_s", self.eval_every_s)
        _positive_int("eval_samples", self.eval_samples)
        if self.target_loss is not None:
            _positive("target_loss", self.target_loss)
        if self.stop_at_target and self.target_loss is None:
            raise DataParallelError("stop_at_target", "needs target_loss")
        _positive("bandwidth_gbps", self.bandwidth_gbps)
        _at_least_zero("latency_s", self.latency_s)
        _at_least_zero("jitter", self.jitter)
        _positive("rebalance_every_s", self.rebalance_every_s)
        _positive_int("straggler_window", self.straggler_window)
        _positive("straggler_z", self.straggler_z)
        _at_least_zero("profile_warmup", self.profile_warmup)
        _positive_int("profile_rounds", self.profile_rounds)
        if self.backend not in BACKENDS:
            raise DataParallelError("backend", f"unknown backend {self.backend!r}; known: "
                                    + ", ".join(BACKENDS))

    def slowdown(self, worker: int) -> float:
        return self.slowdowns[worker] if self.slowdowns else 1.0

    @property
    def bytes_per_s(self) -> float:
        return self.bandwidth_gbps * 1e9 / 8

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["slowdowns"] = [self.slowdown(w) for w in range(self.workers)]
        data["duration_s"] = None if math.isinf(self.duration_s) else self.duration_s
        return data


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataParallelError(name, f"must be a finite number, got {value!r}")
    if value <= 0:
        raise DataParallelError(name, f"must be > 0, got {value}")


def _at_least_zero(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataParallelError(name, f"must be a finite number, got {value!r}")
    if value < 0:
        raise DataParallelError(name, f"must be >= 0, got {value}")


def _positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataParallelError(name, f"must be an integer, got {value!r}")
    if value <= 0:
        raise DataParallelError(name, f"must be > 0, got {value}")
