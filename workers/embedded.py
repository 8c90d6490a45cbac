"""The embedded default's worker: Celery workers in threads of the server process.

With the in-memory broker, only a worker in the same process can see the queue, and
progress it publishes reaches websocket clients through the in-process channel layer.
Each queue gets its own worker (its own threads), so a plan asked for while two training
runs hold the long queue's threads starts at once.

The workers poll the broker with Celery's blocking loop, each on its own connection, never
with its event loop: kombu keeps one event loop per process (`kombu.asynchronous.hub`), so
two workers of one process on Redis would share it from two threads, and one of them could
stop receiving (seen in CI: a job sat queued in `long` for 180 s while `interactive` ran).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from celery.worker import WorkController
from celery.worker import state as worker_state

from workers.app import app

log = logging.getLogger(__name__)

# webapp.background.kinds.QUEUES, without importing Django models before setup.
QUEUES = ("interactive", "long")


@dataclass
class EmbeddedWorker:
    controllers: list[WorkController]
    threads: list[threading.Thread]

    def stop(self, timeout_s: float = 10.0) -> list[str]:
        """Stop consuming; wait up to `timeout_s` in all for the workers' threads; returns
        the names of those still running (a task that did not stop). Running work is told
        to stop first, and nothing new starts (`background.leases.close_local`).

        Each worker leaves its loop from its own thread (Celery's shutdown flag, as
        `celery.contrib.testing` does): calling `WorkController.stop` from this thread would
        read the consumer's pending Redis BRPOP answer from a second thread, which can block
        for good (seen in CI). The flag is process-wide, so it is cleared again for workers
        started later in this process (the tests start one per test)."""
        deadline = time.monotonic() + timeout_s
        worker_state.should_stop = 0
        try:
            for thread in self.threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        finally:
            worker_state.should_stop = None
        stuck = [t.name for t in self.threads if t.is_alive()]
        if stuck:
            log.warning("embedded Celery workers %s did not stop within %.0f s",
                        ", ".join(stuck), timeout_s)
            for controller in self.controllers:  # no longer consuming, at least
                threading.Thread(target=controller.stop, kwargs={"in_sighandler": False},
                                 daemon=True).start()
        return stuck


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
        use_eventloop=False,
    )
    thread = threading.Thread(target=controller.start, name=f"celery-{queue}", daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError(f"the embedded Celery worker for {queue} did not start within 30 s")
    return controller, thread
