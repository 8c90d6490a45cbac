"""`train()`: profile the workers, then run one of the backends, chosen from `BACKENDS`.

| backend | module | clock | transport |
|---|---|---|---|
| `emulated` | `emulated.py` | discrete-event, emulated seconds | in-process replicas |
| `process` | `process/server.py` | this machine's wall clock | one OS process per worker |

Both hold one `state.ServerState` and take a `job.DataParallelRun`; adding a backend is one
class with `__init__(run)` and `run() -> TrainResult`, one line in `BACKEND_CLASSES`, and its
name in `config.BACKENDS` (what `TrainConfig` accepts).
"""

from __future__ import annotations

from typing import Protocol

import torch

from heterps_core.dataparallel.config import BACKENDS, TrainConfig
from heterps_core.dataparallel.emulated import EmulatedBackend
from heterps_core.dataparallel.events import MetricsCallback, WorkerProfile, no_metrics
from heterps_core.dataparallel.job import (
    CancelHook,
    DataParallelRun,
    make_workers,
    never_cancel,
    shard_stream,
)
from heterps_core.dataparallel.modes.base import SyncMode
from heterps_core.dataparallel.process.server import ProcessBackend
from heterps_core.dataparallel.profiling import profile_workers
from heterps_core.dataparallel.result import TrainResult
from heterps_core.zoo.base import ModelConfig, ZooModel


class Backend(Protocol):
    def run(self) -> TrainResult: ...


BACKEND_CLASSES: dict[str, type[EmulatedBackend] | type[ProcessBackend]] = {
    "emulated": EmulatedBackend,
    "process": ProcessBackend,
}
assert tuple(BACKEND_CLASSES) == BACKENDS, "config.BACKENDS names every backend class"


def run(job: DataParallelRun) -> TrainResult:
    """Execute a described run on its configured backend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core per emulated worker, as on a cluster
    try:
        backend: Backend = BACKEND_CLASSES[job.config.backend](job)
        return backend.run()
    finally:
        torch.set_num_threads(threads)


def train(
    zoo_model: ZooModel, model_config: ModelConfig, mode: SyncMode, config: TrainConfig,
    metrics: MetricsCallback = no_metrics, cancel: CancelHook = never_cancel,
    profile: tuple[WorkerProfile, ...] | None = None,
) -> TrainResult:
    """Profile the workers (unless `profile` is given), then train; see `DataParallelRun`."""
    return run(DataParallelRun(zoo_model, model_config, mode, config, metrics, cancel, profile))


def profile(
    zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig
) -> tuple[WorkerProfile, ...]:
    """Only the profiling phase, e.g. to share one profile between runs that are compared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = zoo_model.build(model_config, seed=config.seed)
        workers = make_workers(zoo_model, model_config, model, config)
        return profile_workers(workers, config, lambda w: shard_stream(zoo_model, model_config,
                                                                 config, 500 + w))
    finally:
        torch.set_num_threads(threads)
