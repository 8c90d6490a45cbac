"""Data-parallel jobs: the sync modes on offer, and a job's settings checked by the core.

`heterps_core.dataparallel` owns the rules (mode parameters, workers, slowdowns, backend);
this module turns its `DataParallelError` into a `ValidationError` keyed by the same field
(`mode.ssp.staleness`, `dataparallel.slowdowns`) so the form and the API can mark it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from heterps_core.dataparallel import DataParallelError, TrainConfig, modes
from heterps_core.dataparallel.config import BACKENDS

DEFAULT_WORKERS = 3
MAX_WORKERS = 64


def schemas() -> list[dict[str, Any]]:
    """Every registered sync mode: name, summary and the JSON schema of its parameters."""
    return modes.schemas()


def mode_choices() -> list[tuple[str, str]]:
    return [(s["name"], f"{s['name']}: {s['summary']}") for s in schemas()]


def backend_choices() -> list[tuple[str, str]]:
    labels = {"emulated": "emulated: one process, emulated time (repeatable)",
              "process": "process: one OS process per worker, wall-clock time"}
    return [(name, labels.get(name, name)) for name in BACKENDS]


def parse_slowdowns(text: str) -> tuple[float, ...]:
    """'1, 1, 4' -> (1.0, 1.0, 4.0); blank means every worker at full speed."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise ValidationError({"dataparallel.slowdowns": (
            f"must be numbers separated by commas, e.g. 1,1,4; got {text!r}")}) from None


def resolve_mode(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The mode's parameters with defaults filled in, validated by the mode itself."""
    try:
        return dict(modes.create(name, params).p)
    except DataParallelError as exc:
        raise ValidationError({exc.field: exc.problem}) from exc


def settings(workers: Any, slowdowns: Any, backend: Any) -> dict[str, Any]:
    """The job's stored data-parallel settings, checked by `TrainConfig`'s own validation."""
    if isinstance(slowdowns, str):
        slowdowns = parse_slowdowns(slowdowns)
    elif not isinstance(slowdowns, list | tuple):
        raise ValidationError({"dataparallel.slowdowns": (
            f"must be a list of factors or text like 1,1,4; got {slowdowns!r}")})
    stored = {"workers": workers, "slowdowns": list(slowdowns or ()), "backend": backend}
    train_config(stored, steps=1, batch_size=1, lr=0.05, seed=0)
    stored["slowdowns"] = [float(s) for s in stored["slowdowns"]]  # checked numbers by now
    return stored


def train_config(
    stored: Mapping[str, Any], steps: int, batch_size: int, lr: float, seed: int
) -> TrainConfig:
    try:
        return TrainConfig(
            workers=stored["workers"], slowdowns=tuple(stored.get("slowdowns") or ()),
            backend=stored.get("backend", "emulated"), max_steps=steps,
            batch_size=batch_size, lr=lr, seed=seed,
        )
    except DataParallelError as exc:
        field = exc.field if exc.field.startswith("mode") else f"dataparallel.{exc.field}"
        raise ValidationError({field: exc.problem}) from exc
