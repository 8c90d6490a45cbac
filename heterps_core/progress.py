"""One progress interface for every long operation (profiling, training, planning, runs).

The CLI prints it, Celery tasks store it and push it to websockets, tests collect it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Progress:
    """`current` of `total` steps done; `metrics` carries operation-specific numbers."""

    current: int
    total: int
    message: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return 0.0 if self.total <= 0 else min(1.0, self.current / self.total)


ProgressCallback = Callable[[Progress], None]


def no_progress(_: object) -> None:
    """The default callback of every stream (progress, a run's metric samples, a training's
    events): report nothing."""
