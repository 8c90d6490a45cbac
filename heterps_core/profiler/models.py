"""Profiling a zoo model by name, including production sizes this machine cannot hold, and
estimating one unit of a resource type running it (`heterps estimate`).

Times come from a copy whose tables are capped at `rows_cap` rows (a lookup costs the same per
row whatever the table size, apart from cache effects); parameter and memory figures come from
the full configuration, built on the meta device so nothing is allocated.

An estimate is a profile put through the instance builder with a catalogue of that one type:
the same figures `heterps profile` writes into an instance, summed. A GPU type's figures come
from operator counts alone, so its profile times each layer once, untimed repeats being of no
use to it; a CPU type's figures scale this machine's measurement, so they get `repeats`.
"""

from __future__ import annotations

from dataclasses import replace

from heterps_core import zoo
from heterps_core.hardware.catalogue import Catalogue, ResourceKind, effective_precision
from heterps_core.hardware.roofline import RULE
from heterps_core.hardware.throughput import LayerFigure, ModelEstimate, model_estimate
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


def estimate_zoo_model(
    name: str,
    resource: ResourceKind,
    size: str = "small",
    batch_size: int | None = None,
    rows_cap: int = DEFAULT_ROWS_CAP,
    threads: int = 2,
    repeats: int = 5,
    seed: int = 0,
    progress: ProgressCallback = no_progress,
) -> ModelEstimate:
    """One unit of `resource` (at its own precision) training zoo model `name` whole."""
    timed = resource.kind != "gpu"
    options = ProfileOptions(threads=threads, warmup=3 if timed else 0,
                             repeats=repeats if timed else 1,
                             optimizer=zoo.get(name).default_optimizer)
    profile = profile_zoo_model(name, options, size=size, batch_size=batch_size,
                                rows_cap=rows_cap, seed=seed, progress=progress)
    return estimate_profile(profile, resource)


def estimate_profile(profile: ModelProfile, resource: ResourceKind) -> ModelEstimate:
    """The figures the instance builder gives `resource` from `profile`, summed."""
    from heterps_core.profiler.instance_builder import build_instance

    built = build_instance(profile, Catalogue((resource,)), throughput_target=1.0)
    figures = {f.layer: f for f in built.figures if f.resource == resource.name}
    layers = [
        LayerFigure(layer.name, figures[layer.name].seconds,
                    str(figures[layer.name].detail.get("rule", RULE)),
                    figures[layer.name].detail, layer.ops)
        for layer in profile.layers
    ]
    memory_gb = sum(layer.memory_bytes for layer in profile.layers) / 1e9
    precision = effective_precision(resource) if resource.kind == "gpu" else resource.precision
    return model_estimate(profile.model, profile.size, resource, precision, profile.batch_size,
                          layers, memory_gb)
