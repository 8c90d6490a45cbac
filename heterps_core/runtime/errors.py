"""Errors of the runtime: bad run settings, and jobs that fail while they run."""

from __future__ import annotations

from heterps_core.errors import HeterPSError, InstanceError


class RunConfigError(InstanceError):
    """A run setting (binding, model, steps, plan) is not usable; names the field."""


class RunError(HeterPSError):
    """A job stopped before finishing: which process failed, how, and what it said."""

    def __init__(self, message: str, pids: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.pids = pids


class RunCancelled(HeterPSError):
    """The job was cancelled; its last complete checkpoint (if any) is intact."""

    def __init__(self, step: int, checkpoint_step: int | None, pids: tuple[int, ...] = ()) -> None:
        where = f"checkpoint at step {checkpoint_step}" if checkpoint_step else "no checkpoint"
        super().__init__(f"run cancelled at step {step} ({where})")
        self.step = step
        self.checkpoint_step = checkpoint_step
        self.pids = pids


class RunPreempted(HeterPSError):
    """The job was drained (a SIGTERM: a spot notice): every process checkpointed at `step`
    and ended; `--resume` continues from there."""

    def __init__(self, step: int, checkpoint_step: int | None, reason: str,
                 pids: tuple[int, ...] = ()) -> None:
        saved = (f"complete checkpoint at step {checkpoint_step}; resume to continue"
                 if checkpoint_step else "no complete checkpoint")
        super().__init__(f"run stopped early at step {step} ({reason}): {saved}")
        self.step = step
        self.reason = reason
        self.checkpoint_step = checkpoint_step
        self.pids = pids
