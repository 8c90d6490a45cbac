"""The sizes zoo models are built in, and a clear error for any other.

Every model has the three common sizes; a model whose architecture was published (and
trained, with a throughput figure to check against) adds that configuration under its own
name, so the validation rows are the planner's own models (issue 21).
"""

from __future__ import annotations

from heterps_core.errors import HeterPSError

SIZES = ("tiny", "small", "production")
# Published configurations, by the model that has them.
PUBLISHED_SIZES = {"dlrm": ("criteo-1tb",), "ctr_dnn": ("paddle",)}
ALL_SIZES = SIZES + tuple(s for sizes in PUBLISHED_SIZES.values() for s in sizes)


class UnknownSizeError(HeterPSError, ValueError):
    """A model size no zoo model has."""


def sizes_of(model: str) -> tuple[str, ...]:
    """The sizes zoo model `model` is built in."""
    return SIZES + PUBLISHED_SIZES.get(model, ())


def check_size(size: str, model: str | None = None) -> str:
    allowed = sizes_of(model) if model is not None else SIZES
    if size not in allowed:
        owner = f" for model {model!r}" if model is not None else ""
        raise UnknownSizeError(f"size must be one of {', '.join(allowed)}{owner}, got {size!r}")
    return size
