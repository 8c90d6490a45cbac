"""Errors a person can act on: each names the field (or thing) and the problem."""


class HeterPSError(Exception):
    """Base class for every error the core reports to a user."""


class InstanceError(HeterPSError, ValueError):
    """A planning instance (or plan, or assignment) is not valid.

    `field` is a JSON-path-like location such as ``layers[2].compute_s.gpu``.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


class SchedulerError(HeterPSError):
    """A scheduler refuses an instance (for example brute force on a huge space)."""
