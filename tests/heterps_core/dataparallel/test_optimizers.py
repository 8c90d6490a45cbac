"""The process backend with Adam, Adagrad and SGD equals torch's own loop.

Real worker processes and a real parameter-server process: the tables live on the server's
shard (lazy per-row optimiser), the workers pull and push rows each step. The reference is a
plain torch loop on the same model, seed and batches, with torch's SparseAdam / sparse
Adagrad / SGD on the table and Adam / Adagrad / SGD on the dense layers.
"""

from __future__ import annotations

import pytest
import torch

from heterps_core import zoo
from heterps_core.cli import main
from heterps_core.dataparallel import TrainConfig, TrainEvent, TrainResult, modes, train
from heterps_core.dataparallel.events import StepEvent
from heterps_core.dataparallel.job import shard_stream
from heterps_core.ps import optim
from heterps_core.zoo.base import Batch

pytestmark = pytest.mark.slow

STEPS = 20
BATCH = 32
LR = {"sgd": 0.05, "adagrad": 0.01, "adam": 0.001}


def run(optimizer: str, workers: int, mode: str = "bsp") -> tuple[TrainResult, list[StepEvent]]:
    model = zoo.get("ctr_dnn")
    steps: list[StepEvent] = []

    def collect(event: TrainEvent) -> None:
        if isinstance(event, StepEvent):
            steps.append(event)

    config = TrainConfig(workers=workers, batch_size=BATCH, lr=LR[optimizer],
                         optimizer=optimizer, max_steps=STEPS * workers, eval_every_s=600.0,
                         eval_samples=256, backend="process", profile_warmup=1,
                         profile_rounds=2)
    result = train(model, model.config("tiny"), modes.create(mode), config, metrics=collect)
    return result, steps


def plain_losses(optimizer: str, workers: int) -> tuple[list[float], list[int]]:
    """torch's loop on the workers' batches of each step together; the losses and, per step,
    the distinct table rows the batch of worker 0 looked up."""
    zoo_model = zoo.get("ctr_dnn")
    model_config = zoo_model.config("tiny")
    config = TrainConfig(workers=workers, batch_size=BATCH, max_steps=1)
    model = zoo_model.build(model_config, seed=config.seed)
    opts = optim.plain_optimizers(model, optim.create(optimizer, LR[optimizer]),
                                  optim.create(optimizer, LR[optimizer]))
    streams = [shard_stream(zoo_model, model_config, config, 1 + w) for w in range(workers)]
    losses, distinct = [], []
    for _ in range(STEPS):
        parts = [stream.take(BATCH) for stream in streams]
        distinct.append(_distinct_rows(parts[0]))
        inputs = {k: torch.cat([p[0][k] for p in parts]) for k in parts[0][0]}
        labels = torch.cat([p[1] for p in parts])
        loss = model.loss(model(inputs), labels)
        loss.backward()
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    return losses, distinct


def _distinct_rows(batch: Batch) -> int:
    offsets = torch.arange(0, 26 * 100, 100)  # tiny CTR-DNN: 26 fields of 100 rows
    return int(torch.unique(batch[0]["sparse"] + offsets).numel())


def mean_loss_per_step(steps: list[StepEvent], workers: int) -> list[float]:
    by_step: dict[int, list[float]] = {}
    for event in steps:
        by_step.setdefault(event.step, []).append(event.loss)
    return [sum(by_step[s]) / workers for s in sorted(by_step) if len(by_step[s]) == workers]


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_one_worker_equals_a_plain_torch_loop(optimizer: str) -> None:
    result, steps = run(optimizer, workers=1)
    expected, distinct = plain_losses(optimizer, workers=1)
    got = [e.loss for e in sorted(steps, key=lambda e: e.step)]
    assert len(got) == STEPS
    assert got == pytest.approx(expected, abs=1e-5)
    assert got[-1] < got[0]
    # Bytes sent: per step the ids pulled (int64) and, pushed, the ids and one float32
    # gradient row of dim 10 per distinct row; one worker has no all-reduce to send. The
    # whole table (2,600 rows) never travels.
    assert result.workers[0].bytes_sent == sum(d * (8 + 8 + 4 * 10) for d in distinct)
    table_bytes = 26 * 100 * 10 * 4
    assert result.to_dict()["workers"][0]["bytes_sent_per_step"] < table_bytes / 2


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_two_workers_in_bsp_equal_one_loop_on_both_batches(optimizer: str) -> None:
    # The gradients are all-reduced (dense) and summed per row on a synchronous shard
    # (tables) before one optimiser step: one step on the 2 x 32 samples together, for
    # every optimiser.
    _, steps = run(optimizer, workers=2)
    expected, _ = plain_losses(optimizer, workers=2)
    got = mean_loss_per_step(steps, workers=2)
    assert len(got) >= STEPS - 1
    assert got == pytest.approx(expected[: len(got)], abs=1e-5)


def test_asp_with_adam_trains() -> None:
    result, steps = run("adam", workers=2, mode="asp")
    assert result.stopped == "max_steps"
    assert {e.worker for e in steps} == {0, 1}
    assert result.final.loss < result.evals[0].loss


def test_an_unknown_optimizer_names_the_flag_and_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["train-dp", "ctr_dnn", "--optimizer", "foo"]) == 2
    err = capsys.readouterr().err
    assert "--optimizer" in err and "adagrad, adam, sgd" in err and "'foo'" in err
    assert "Traceback" not in err
