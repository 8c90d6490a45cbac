"""Heterogeneous data-parallel training: sync modes, stragglers, profiling, metrics.

`train(zoo_model, model_config, modes.create(name, params), TrainConfig(...), metrics=...)`
profiles the workers, trains, streams events to `metrics` and returns a `TrainResult`.
`TrainConfig(backend="process")` runs the workers as real OS processes (see `process/`).
See docs/sync-modes.md.
"""

from heterps_core.dataparallel import modes
from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.errors import DataParallelError
from heterps_core.dataparallel.events import MetricsCallback, TrainEvent, event_to_dict
from heterps_core.dataparallel.job import DataParallelRun
from heterps_core.dataparallel.result import TrainResult, WorkerSummary
from heterps_core.dataparallel.trainer import profile, train

__all__ = [
    "DataParallelError", "DataParallelRun", "MetricsCallback", "TrainConfig", "TrainEvent",
    "TrainResult", "WorkerSummary", "event_to_dict", "modes", "profile", "train",
]
