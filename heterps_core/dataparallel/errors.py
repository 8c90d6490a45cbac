"""The error the data-parallel trainer reports to a person: it names the field and the problem."""

from __future__ import annotations

from heterps_core.errors import HeterPSError


class DataParallelError(HeterPSError, ValueError):
    """A data-parallel job setting is not valid, e.g. ``mode.staleness: must be >= 0``."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)
