"""Shared runs: each sync mode once on tiny CTR-DNN, 3 workers, the third 4x slower."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from heterps_core import zoo
from heterps_core.dataparallel import TrainConfig, TrainEvent, TrainResult, modes, train
from heterps_core.dataparallel.job import CancelHook, never_cancel

SLOWDOWNS = (1.0, 1.0, 4.0)
SSP_BOUND = 2
TOPK_RATIO = 0.02
MODE_PARAMS: dict[str, dict[str, object]] = {
    "ssp": {"staleness": SSP_BOUND},
    # Switch on a threshold the tiny model crosses early, so the run has a long SHL phase.
    "ashl": {"topk_ratio": TOPK_RATIO, "switch_loss": 0.65, "plateau_window": 0},
}


@dataclass
class Recorded:
    result: TrainResult
    events: list[TrainEvent] = field(default_factory=list)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def config(**overrides: object) -> TrainConfig:
    settings: dict[str, object] = dict(
        workers=3, slowdowns=SLOWDOWNS, batch_size=64, lr=0.05, max_steps=450,
        eval_every_s=0.05, eval_samples=2048, seed=1,
    )
    settings.update(overrides)
    return TrainConfig(**settings)  # type: ignore[arg-type]


def run_mode(
    name: str, params: dict[str, object] | None = None, cancel: CancelHook = never_cancel,
    **overrides: object,
) -> Recorded:
    model = zoo.get("ctr_dnn")
    events: list[TrainEvent] = []
    mode = modes.create(name, params if params is not None else MODE_PARAMS.get(name, {}))
    result = train(model, model.config("tiny"), mode, config(**overrides), metrics=events.append,
                   cancel=cancel)
    return Recorded(result, events)


def numel() -> int:
    model = zoo.get("ctr_dnn")
    return sum(p.numel() for p in model.build(model.config("tiny")).parameters())


@pytest.fixture(scope="session")
def runs() -> dict[str, Recorded]:
    return {name: run_mode(name) for name in modes.names()}
