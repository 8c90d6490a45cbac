"""Worker process hooks: the work sweeper runs in every worker's main process.

A worker that starts sweeps at once (records a dead worker left behind), then every
WORK_SWEEP_S (webapp.background.sweeper). Pool children do not sweep.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready, worker_shutting_down

log = logging.getLogger(__name__)


@worker_ready.connect
def start_sweeper(sender: Any = None, **kwargs: Any) -> None:
    from django.db import connection

    from webapp.background import sweeper

    try:
        sweeper.sweep()
    except Exception:  # the database is away: the periodic sweep tries again
        log.warning("start-up sweep failed", exc_info=True)
    finally:
        connection.close()
    sweeper.start_periodic()


@worker_shutting_down.connect
def stop_sweeper(sender: Any = None, **kwargs: Any) -> None:
    from webapp.background import sweeper

    sweeper.stop_periodic()
