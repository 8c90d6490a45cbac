"""The embedded default's worker: Celery workers in threads of the server process.

With the in-memory broker, only a worker in the same process can see the queue, and
progress it publishes reaches websocket clients through the in-process channel layer.
Each queue gets its own worker (its own threads), so a plan asked for while two training
runs hold the long queue's threads starts at once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from celery.worker import WorkController

from workers.app import app

log = logging.getLogger(__name__)

# webapp.background.kinds.QUEUES, without importing Django models before setup.
QUEUES = ("interactive", "long")


@dataclass
class EmbeddedWorker:
    controllers: list[WorkController]
    threads: list[threading.Thread]

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop consuming; wait up to `timeout_s` in all, then return regardless.
        Running work is told to stop first (`background.services.stop_local_work`).

        Stopping happens in a thread of its own because closing a Redis channel reads the
        answer of the consumer's pending BRPOP, which can block for good (seen in CI on a
        teardown); the worker threads are daemons, so a stuck close cannot keep the process
        alive, and shutdown keeps its 10 s promise."""
        deadline = time.monotonic() + timeout_s
        stopper = threading.Thread(target=self._stop_controllers, name="celery-stop",
                                   daemon=True)
        stopper.start()
        stopper.join(timeout_s)
        if stopper.is_alive():
            log.warning("embedded Celery workers did not stop within %.0f s; leaving them "
                        "to end with the process", timeout_s)
            return
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _stop_controllers(self) -> None:
        for controller in self.controllers:
            controller.stop(in_sighandler=False)


def start(concurrency: int = 2, queues: tuple[str, ...] = QUEUES) -> EmbeddedWorker:
    """Start one worker per queue with `concurrency` threads each; return once all are ready."""
    app.loader.import_default_modules()
    controllers, threads = [], []
    for queue in queues:
        controller, thread = _start_one(queue, concurrency)
        controllers.append(controller)
        threads.append(thread)
    log.info("embedded Celery workers: %s, %d threads each", ", ".join(queues), concurrency)
    return EmbeddedWorker(controllers, threads)


def _start_one(queue: str, concurrency: int) -> tuple[WorkController, threading.Thread]:
    ready = threading.Event()

    class Controller(WorkController):
        def on_consumer_ready(self, consumer: object) -> None:
            ready.set()

    controller = Controller(
        app=app,
        pool="threads",
        concurrency=concurrency,
        queues=[queue],
        hostname=f"embedded-{queue}@{threading.get_ident()}",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="INFO",
    )
    thread = threading.Thread(target=controller.start, name=f"celery-{queue}", daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError(f"the embedded Celery worker for {queue} did not start within 30 s")
    return controller, thread
