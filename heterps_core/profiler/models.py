"""Profiling a zoo model by name, including production sizes this machine cannot hold.

Times come from a copy whose tables are capped at `rows_cap` rows (a lookup costs the same per
row whatever the table size, apart from cache effects); parameter and memory figures come from
the full configuration, built on the meta device so nothing is allocated.
"""

from __future__ import annotations

from dataclasses import replace

from heterps_core import zoo
from heterps_core.profiler.chain import ProfileError, ProfileOptions, profile_chain
from heterps_core.profiler.result import ModelProfile
from heterps_core.progress import ProgressCallback, no_progress
from heterps_core.zoo.base import ModelConfig, chain_of

DEFAULT_ROWS_CAP = 100_000


def capped(config: ModelConfig, rows_cap: int) -> ModelConfig:
    return replace(config, vocab_sizes=tuple(min(int(v), rows_cap) for v in config.vocab_sizes))


def profile_zoo_model(
    name: str,
    options: ProfileOptions,
    size: str = "small",
    batch_size: int | None = None,
    rows_cap: int = DEFAULT_ROWS_CAP,
    seed: int = 0,
    progress: ProgressCallback = no_progress,
) -> ModelProfile:
    model_def = zoo.get(name)
    if rows_cap < 1:
        raise ProfileError(f"--rows-cap must be at least 1, got {rows_cap}")
    batch_size = batch_size or model_def.default_batch_size
    if batch_size < 1:
        raise ProfileError(f"--batch-size must be at least 1, got {batch_size}")
    config = model_def.config(size)
    timed = capped(config, rows_cap)
    model = model_def.build(timed, seed=seed)
    batch = next(model_def.batches(timed, batch_size, seed=seed))
    was_capped = timed.vocab_sizes != config.vocab_sizes
    return profile_chain(
        model,
        batch,
        options,
        name=name,
        size=size,
        planned=chain_of(model_def, config),
        rows_cap=rows_cap if was_capped else None,
        progress=progress,
    )
