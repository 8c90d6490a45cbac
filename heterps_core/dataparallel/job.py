"""A data-parallel run, described: the model, the sync mode, the settings, where events go.

Pure data plus the seeded set-up both backends share (the workers' replicas and shards, the
held-out set), so the emulated and the process backend start from the same state.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from heterps_core.dataparallel.config import TrainConfig
from heterps_core.dataparallel.data import ShardStream
from heterps_core.dataparallel.events import MetricsCallback, WorkerProfile, no_metrics
from heterps_core.dataparallel.modes.base import SyncMode
from heterps_core.dataparallel.worker import Worker
from heterps_core.processes import CancelHook, cancelled
from heterps_core.zoo.base import Batch, ChainModel, ModelConfig, ZooModel

__all__ = ["CancelHook", "DataParallelRun", "held_out", "make_workers", "never_cancel",
           "shard_stream"]


def never_cancel() -> bool:
    return False


@dataclass(frozen=True)
class DataParallelRun:
    """One run of a zoo model under one sync mode (`train()` executes it)."""

    zoo_model: ZooModel
    model_config: ModelConfig
    mode: SyncMode
    config: TrainConfig
    metrics: MetricsCallback = no_metrics
    cancel: CancelHook = never_cancel
    given_profile: tuple[WorkerProfile, ...] | None = None

    def build(self) -> ChainModel:
        return self.zoo_model.build(self.model_config, seed=self.config.seed)

    def held_out(self) -> Batch:
        return held_out(self.zoo_model, self.model_config, self.config)

    def cancelled(self) -> bool:
        return cancelled(self.cancel)


def shard_stream(zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig,
                 offset: int) -> ShardStream:
    """Worker w trains on offset 1 + w and profiles on 500 + w (seeded, so repeatable)."""
    seed = config.seed * 1000 + offset
    return ShardStream(iter(zoo_model.batches(model_config, config.batch_size, seed=seed)))


def make_workers(zoo_model: ZooModel, model_config: ModelConfig, model: ChainModel,
                 config: TrainConfig) -> list[Worker]:
    return [
        Worker(w, copy.deepcopy(model), shard_stream(zoo_model, model_config, config, 1 + w),
               config.batch_size, config.lr, config.momentum, config.optimizer)
        for w in range(config.workers)
    ]


def held_out(zoo_model: ZooModel, model_config: ModelConfig, config: TrainConfig) -> Batch:
    stream = ShardStream(iter(zoo_model.batches(model_config, config.eval_samples,
                                                seed=1_000_000 + config.seed)))
    return stream.take(config.eval_samples)
