"""Thin tasks: ids in, a service call, nothing else. Progress and errors are the service's job.

One task runs every work kind (webapp.background.kinds); kinds choose their queue.
"""

from __future__ import annotations

from workers.app import app


@app.task(name="heterps.run_work", acks_late=True, ignore_result=True)
def run_work(work_id: int) -> None:
    from webapp.background.services import run_work as run

    run(work_id)


@app.task(name="heterps.ping")
def ping(payload: str) -> dict[str, str]:
    """Echo through the broker and result backend: the cheapest round-trip check."""
    import socket

    return {"echo": payload, "worker": socket.gethostname()}
