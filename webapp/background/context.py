"""What a running work kind is handed: its record, project and user, progress, cancellation.

`services.run_work` builds one per attempt. Kinds report progress through `ctx.progress`
(it stores, publishes and refreshes the lease) and check `ctx.cancelled()` in long loops;
`ctx.stop` is the same signal as a `threading.Event`, for code that polls an event (the
runtime's launcher). It is set when someone cancels, when the server shuts down, or when
the lease passed to another attempt; `stop_reason` says which.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from heterps_core.progress import Progress, ProgressCallback, no_progress

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from webapp.background.models import Work
    from webapp.projects.models import Project


class WorkCancelled(Exception):
    """Raised inside a running kind once its stop signal is set (cancel, shutdown, lost
    lease); `services.run_work` records the outcome from `WorkContext.stop_reason`."""


class LeaseLost(WorkCancelled):
    """Raised by a progress report once another attempt holds the record's lease."""


class StopReason:
    CANCELLED = "cancelled"
    SHUTDOWN = "shutdown"
    LEASE_LOST = "lease lost"


@dataclass
class WorkContext:
    work_id: int
    project_id: int
    user_id: int | None
    params: dict[str, Any]
    attempt: int = 1
    report: ProgressCallback = no_progress
    # Stores progress and refreshes the lease without publishing it: for a kind that
    # publishes its own event about the same step (a job's sample).
    quiet: ProgressCallback = no_progress
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""

    def progress(self, progress: Progress, publish: bool = True) -> None:
        """Store and publish `progress` (`publish` False: store only); raises WorkCancelled
        once the stop signal is set."""
        if self.stop.is_set():
            raise WorkCancelled(self.stop_reason)
        try:
            (self.report if publish else self.quiet)(progress)
        except LeaseLost:
            self.request_stop(StopReason.LEASE_LOST)
            raise
        except WorkCancelled:
            self.request_stop(StopReason.CANCELLED)
            raise

    def cancelled(self) -> bool:
        return self.stop.is_set()

    def request_stop(self, reason: str) -> None:
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()

    @property
    def work(self) -> Work:
        from webapp.background.models import Work

        return Work.objects.get(pk=self.work_id)

    @property
    def project(self) -> Project:
        from webapp.projects.models import Project

        return Project.objects.get(pk=self.project_id)

    @property
    def user(self) -> User | None:
        from django.contrib.auth import get_user_model

        if self.user_id is None:
            return None
        return get_user_model().objects.filter(pk=self.user_id).first()
