"""The embedded default's worker: a Celery worker in a thread of the server process.

With the in-memory broker, only a worker in the same process can see the queue, and
progress it publishes reaches websocket clients through the in-process channel layer.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from celery.worker import WorkController

from workers.app import app

log = logging.getLogger(__name__)


@dataclass
class EmbeddedWorker:
    controller: WorkController
    thread: threading.Thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self.controller.stop(in_sighandler=False)
        self.thread.join(timeout_s)


def start(concurrency: int = 2, queues: tuple[str, ...] = ("default",)) -> EmbeddedWorker:
    """Start consuming `queues` in background threads and return once the worker is ready."""
    ready = threading.Event()

    class Controller(WorkController):
        def on_consumer_ready(self, consumer: object) -> None:
            ready.set()

    app.loader.import_default_modules()
    controller = Controller(
        app=app,
        pool="threads",
        concurrency=concurrency,
        queues=list(queues),
        hostname=f"embedded@{threading.get_ident()}",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="INFO",
    )
    thread = threading.Thread(target=controller.start, name="celery-embedded", daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the embedded Celery worker did not start within 30 s")
    log.info("embedded Celery worker consuming %s with %d threads", ",".join(queues), concurrency)
    return EmbeddedWorker(controller, thread)
