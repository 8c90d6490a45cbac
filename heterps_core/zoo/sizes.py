"""The sizes every zoo model is built in, and a clear error for any other."""

from __future__ import annotations

from heterps_core.errors import HeterPSError

SIZES = ("tiny", "small", "production")


class UnknownSizeError(HeterPSError, ValueError):
    """A model size no zoo model has."""


def check_size(size: str) -> str:
    if size not in SIZES:
        raise UnknownSizeError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    return size
