"""webapp's one door to Celery: enqueueing work and agents, asking which machines serve a
type, the broker connection `/healthz` and the sweeper inspect, the embedded worker.

The Celery app is defined in `workers/app.py` (its broker settings and task list) and web
processes must enqueue on that same app, so this module imports it, lazily (web pages that
never enqueue do not load Celery). No other webapp module imports `workers`
(tests/test_architecture.py lists this edge as the one exception). Tasks are sent by name,
so the task code (which imports webapp services) stays above webapp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from heterps_core.agents import (
    DEFAULT_JOIN_TIMEOUT_S,
    PROFILE_TASK,
    RUNTIME_TASK,
    agents_per_type,
    queue_for,
)

if TYPE_CHECKING:
    from celery import Celery
    from celery.result import AsyncResult


def app() -> Celery:
    """The project's Celery app."""
    from workers.app import app as project_app

    return project_app


def send_task(name: str, args: Sequence[Any], queue: str, **options: Any) -> AsyncResult:
    return app().send_task(name, args=list(args), queue=queue, **options)


def serving(resource_types: Sequence[str], timeout_s: float = 1.0,
            celery_app: Celery | None = None) -> set[str]:
    """The types among `resource_types` whose agent queue some live worker consumes now."""
    wanted = {queue_for(t): t for t in resource_types}
    try:
        replies = (celery_app or app()).control.inspect(timeout=timeout_s).active_queues() or {}
    except Exception:  # broker unreachable: nobody could take an agent task
        return set()
    consumed = {q.get("name") for queues in replies.values() for q in queues or ()}
    return {t for queue, t in wanted.items() if queue in consumed}


def dispatch_agents(
    coordinator: str,
    remote_types: Mapping[str, int] | Sequence[str],
    bind: Mapping[str, str] | None = None,
    *,
    spread: int = 1,
    join_timeout: float = DEFAULT_JOIN_TIMEOUT_S,
    celery_app: Celery | None = None,
) -> list[AsyncResult]:
    """Enqueue the agents of a job whose launcher listens at `coordinator` (HOST:PORT).

    `remote_types`: the types bound to `remote`, as a list or as {type: units}
    (`heterps_core.agents.remote_units(launcher.spec)`). `bind` gives the target a worker
    machine runs a type on (`{"gpu-v100": "cuda:0"}`); types it does not name follow the
    job's target (remote -> cpu, remote:cuda -> cuda:0). An agent task not started within
    `join_timeout` seconds expires: by then the launcher has stopped waiting for it.
    """
    sender = celery_app or app()
    results: list[AsyncResult] = []
    for resource, count in agents_per_type(remote_types, spread).items():
        local = (bind or {}).get(resource)
        args = [coordinator, [resource], f"{resource}={local}" if local else None, "", join_timeout]
        results += [
            sender.send_task(RUNTIME_TASK, args=args, queue=queue_for(resource),
                             expires=join_timeout)
            for _ in range(count)
        ]
    return results


def dispatch_profile(run_id: int, origin_id: int, resource_type: str, expires_s: float,
                     celery_app: Celery | None = None) -> str:
    """Ask a worker of `resource_type` to measure; the task id. Not started within
    `expires_s` it expires: the profile no longer waits for it by then."""
    result = (celery_app or app()).send_task(
        PROFILE_TASK, args=[run_id, origin_id], queue=queue_for(resource_type),
        expires=expires_s)
    return str(result.id)


def revoke_profiles(task_ids: Sequence[str], celery_app: Celery | None = None) -> None:
    """Tell workers to drop profile tasks nobody waits for any more (best effort: a broker
    that is gone means no worker would take them either)."""
    if not task_ids:
        return
    try:
        (celery_app or app()).control.revoke(list(task_ids))
    except Exception:  # the fallback is already stored; nothing more to do
        return


def start_embedded_worker(concurrency: int) -> Any:
    """The embedded default's worker threads (`workers/embedded.py`); `.stop(timeout_s)`."""
    from workers import embedded

    return embedded.start(concurrency=concurrency)

