"""Where a job's mini-batches come from: the model's seeded synthetic stream, or a Criteo file.

Both are indexable: stage-1 replica r of k makes (or parses) only mini-batches r, r + k, ...,
and the union over replicas is exactly the one-replica stream, which is also what the
plain reference loop reads. `TrainSettings.data` names the source: "" (synthetic) or
"criteo:PATH" (plain or .gz TSV, read in a loop). The held-out set is a fixed slice: a
synthetic batch no training mini-batch repeats, or the file's first `eval_samples` lines
(then left out of training).

A job process reads its stream `ahead` mini-batches ahead on a background thread
(`prefetch.py`): the same batches in the same order, made while the stage computes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.prefetch import Prefetched
from heterps_core.runtime.spec import TrainSettings
from heterps_core.zoo.base import Batch, ModelConfig, ZooModel
from heterps_core.zoo.criteo import CriteoFormatError, criteo_held_out, criteo_stream
from heterps_core.zoo.data import held_out_batch, indexed_batches

KINDS = ("synthetic", "criteo")
# Mini-batches a job process makes ahead: enough to cover a slow one, few enough that the
# queue's memory (a few batches of inputs) does not matter. The compile step makes it 0 where
# the job's threads hold every core (threads.input_ahead); HETERPS_INPUT_AHEAD overrides both
# (for measuring the difference).
AHEAD = 2
AHEAD_ENV = "HETERPS_INPUT_AHEAD"


@dataclass(frozen=True)
class DataSource:
    kind: str  # "synthetic" or "criteo"
    path: str = ""

    def describe(self) -> str:
        return self.kind if self.kind == "synthetic" else f"{self.kind}:{self.path}"


def parse_data(text: str) -> DataSource:
    """"" or "synthetic" -> the model's stream; "criteo:PATH" -> that file."""
    if not text or text == "synthetic":
        return DataSource("synthetic")
    kind, sep, path = text.partition(":")
    if kind != "criteo" or not sep or not path:
        raise RunConfigError("data", f"must be 'synthetic' or 'criteo:PATH', got {text!r}")
    return DataSource(kind, path)


def replica_batches(
    train: TrainSettings, zoo: ZooModel, config: ModelConfig, start: int = 0, step: int = 1,
    ahead: int = 0,
) -> Iterator[Batch]:
    """Mini-batches start, start + step, ... of the job's data, making only those; with
    `ahead` > 0, made that many ahead on a background thread (started by the first `next`)."""
    source = parse_data(train.data)
    if source.kind == "criteo":
        batches = criteo_stream(source.path, train.batch_size, config.vocab_sizes, start=start,
                                step=step, skip=train.eval_samples)
    else:
        batches = indexed_batches(zoo, config, train.batch_size, seed=train.seed, start=start,
                                  step=step)
    return Prefetched(batches, ahead, name="heterps-input") if ahead > 0 else batches


def job_ahead(sized: int | None = None) -> int:
    """How many mini-batches a job process makes ahead: HETERPS_INPUT_AHEAD when set (read
    when its stream starts: the template that forked it read no environment of its), else
    what the compile step sized (`RankSpec.ahead`, runtime/threads.py), else `AHEAD`."""
    if AHEAD_ENV in os.environ:
        return int(os.environ[AHEAD_ENV])
    return AHEAD if sized is None else sized


def held_out(train: TrainSettings, zoo: ZooModel, config: ModelConfig) -> Batch | None:
    """The job's held-out batch (None when `eval_samples` is 0)."""
    if train.eval_samples <= 0:
        return None
    source = parse_data(train.data)
    if source.kind == "criteo":
        return criteo_held_out(source.path, train.eval_samples, config.vocab_sizes)
    return held_out_batch(zoo, config, train.eval_samples, seed=train.seed)


def check_data(train: TrainSettings, zoo: ZooModel, config: ModelConfig) -> None:
    """Refuse a source the model cannot train on, naming the field (nothing is started).

    A file is read up to its first mini-batch (and the held-out slice), whose inputs must
    have the keys and shapes of the model's own batches.
    """
    source = parse_data(train.data)
    if train.eval_every < 0:
        raise RunConfigError("eval_every", f"must be 0 (off) or more, got {train.eval_every}")
    if train.eval_samples < 0 or (train.eval_every and train.eval_samples < 2):
        raise RunConfigError(
            "eval_samples", f"must be at least 2 when evaluating, got {train.eval_samples}"
        )
    if source.kind == "synthetic":
        return
    if not Path(source.path).is_file():
        raise RunConfigError("data", f"no such file: {source.path}")
    try:
        if len(config.vocab_sizes) != 26:
            raise RunConfigError(
                "data", f"a Criteo file has 26 categorical fields; model {train.model!r} has "
                f"{len(config.vocab_sizes)} tables"
            )
        first = next(replica_batches(train, zoo, config))
        held_out(train, zoo, config)
    except CriteoFormatError as exc:
        raise RunConfigError("data", str(exc)) from None
    own, _ = next(iter(zoo.batches(config, 2, seed=0)))
    got = {key: tuple(value.shape[1:]) for key, value in first[0].items()}
    want = {key: tuple(value.shape[1:]) for key, value in own.items()}
    if got != want:
        raise RunConfigError(
            "data", f"a Criteo batch has inputs {got}; model {train.model!r} takes {want}"
        )
