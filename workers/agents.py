"""Runtime agents through Celery: a worker machine serves a job's remote stages.

Each worker machine runs `celery -A workers worker --queues heterps.res.<type>,...` for the
resource types it provides; a run whose binding has `remote` types calls `dispatch_agents`,
which enqueues one `heterps.runtime_agent` task per remote type on that type's queue. The
task is `heterps_core.runtime.agent.run_agent`: join the job's store, run the ranks the
launcher gives it, report their exit codes (contract: docs/operations.md).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from celery import Celery, Task
from celery.result import AsyncResult

from workers.app import app

if TYPE_CHECKING:  # torch: only where a job actually runs
    from heterps_core.runtime.spec import JobSpec

QUEUE_PREFIX = "heterps.res."
TASK_NAME = "heterps.runtime_agent"
DEFAULT_JOIN_TIMEOUT_S = 60.0


class AgentFailed(RuntimeError):
    """An agent could not serve its job; the message is what the task result shows."""


def queue_for(resource_type: str) -> str:
    """The Celery queue of the machines that provide `resource_type`."""
    if not resource_type.strip():
        raise ValueError("resource_type: must be a non-empty resource type name")
    return f"{QUEUE_PREFIX}{resource_type.strip()}"


# Acked on receipt, not late: an agent belongs to one live job, so redelivering it after a
# worker crash would only join a store that is gone (and wait out its join timeout).
@app.task(bind=True, name=TASK_NAME, acks_late=False, track_started=True)
def runtime_agent(
    self: Task,
    coordinator: str,
    provides: Sequence[str] | str,
    bind: str | None = None,
    name: str = "",
    join_timeout: float = DEFAULT_JOIN_TIMEOUT_S,
) -> int:
    """Serve one job as its agent for `provides`; 0 when all its processes succeeded."""
    from heterps_core.errors import HeterPSError
    from heterps_core.runtime.agent import run_agent

    types = [provides] if isinstance(provides, str) else list(provides)
    who = name or str(self.request.hostname or "")
    try:
        code = run_agent(coordinator, types, who, bind, join_timeout)
    except (HeterPSError, RuntimeError, OSError) as exc:  # RuntimeError: the store went away
        raise AgentFailed(f"agent {who} for {', '.join(types)} at {coordinator}: {exc}") from None
    if code != 0:
        raise AgentFailed(
            f"agent {who} for {', '.join(types)} at {coordinator}: a stage process exited "
            f"with an error (code {code}); the run's error names the rank and its exception"
        )
    return code


def serving(resource_types: Sequence[str], timeout_s: float = 1.0,
            celery_app: Celery | None = None) -> set[str]:
    """The types among `resource_types` whose agent queue some live worker consumes now."""
    wanted = {queue_for(t): t for t in resource_types}
    try:
        replies = (celery_app or app).control.inspect(timeout=timeout_s).active_queues() or {}
    except Exception:  # broker unreachable: nobody could take an agent task
        return set()
    consumed = {q.get("name") for queues in replies.values() for q in queues or ()}
    return {t for queue, t in wanted.items() if queue in consumed}


def remote_units(spec: JobSpec) -> dict[str, int]:
    """{resource type: processes} of the ranks a job's binding sends to agents (stage
    replicas, and parameter-server shards whose planned resource is bound to remote)."""
    units: dict[str, int] = {}
    for rank in spec.ranks:
        if rank.target.startswith("remote"):
            resource = rank.resource or spec.stages[rank.stage].resource
            units[resource] = units.get(resource, 0) + 1
    return units


def coordinator_address(address: str, listen_host: str, public_host: str | None = None) -> str:
    """The HOST:PORT agents on other machines dial for a launcher listening on `listen_host`.

    `Launcher.address` says 127.0.0.1 when the store listens on every interface (0.0.0.0);
    other machines need `public_host`, else this machine's host name.
    """
    port = address.rpartition(":")[2]
    if public_host:
        return f"{public_host}:{port}"
    if listen_host in ("0.0.0.0", ""):
        return f"{socket.gethostname()}:{port}"
    return address


def agents_per_type(remote_types: Mapping[str, int] | Sequence[str], spread: int) -> dict[str, int]:
    """How many agents each remote type gets: `min(units, spread)`, at least one.

    One agent hosts every rank it is given, so one per type is enough; `spread` > 1 asks
    for more machines, never more agents than the type has units.
    """
    if spread < 1:
        raise ValueError(f"spread: must be at least 1, got {spread}")
    if isinstance(remote_types, str):
        raise ValueError("remote_types: give a list of types or a {type: units} mapping")
    units = (
        dict(remote_types) if isinstance(remote_types, Mapping) else dict.fromkeys(remote_types, 1)
    )
    counts = {}
    for resource, count in units.items():
        queue_for(resource)  # validates the name
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"remote_types.{resource}: units must be a positive integer")
        counts[resource] = min(count, spread)
    return counts


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
    (`remote_units(launcher.spec)`). `bind` gives the target a worker machine runs a type on
    (`{"gpu-v100": "cuda:0"}`); types it does not name follow the job's target (remote ->
    cpu, remote:cuda -> cuda:0). An agent task not started within `join_timeout` seconds
    expires: by then the launcher has stopped waiting for it.
    """
    sender = celery_app or app
    results: list[AsyncResult] = []
    for resource, count in agents_per_type(remote_types, spread).items():
        local = (bind or {}).get(resource)
        args = [coordinator, [resource], f"{resource}={local}" if local else None, "", join_timeout]
        results += [
            sender.send_task(TASK_NAME, args=args, queue=queue_for(resource), expires=join_timeout)
            for _ in range(count)
        ]
    return results


# --- profiling on the resources' own machines (webapp/profiling/remote.py) ------------------

PROFILE_TASK_NAME = "heterps.profile_agent"


# Acked on receipt: a redelivered measurement after a crash would answer a wait that has
# moved on (the web side falls back to the roofline at its timeout).
@app.task(bind=True, name=PROFILE_TASK_NAME, acks_late=False)
def profile_agent(self: Task, run_id: int, origin_id: int) -> dict[str, object]:
    """Time profile run `run_id`'s model on this machine for the resource type of its
    origin row `origin_id`; ids only, both checked (a run or row gone is answered, not
    an error). What this machine cannot do is stored as the type's note."""
    if not (isinstance(run_id, int) and isinstance(origin_id, int)):
        raise ValueError("run_id, origin_id: must be integer ids")
    from webapp.profiling.remote import measure_here

    return measure_here(run_id, origin_id, str(self.request.hostname or socket.gethostname()))


def dispatch_profile(run_id: int, origin_id: int, resource_type: str, expires_s: float,
                     celery_app: Celery | None = None) -> str:
    """Ask a worker of `resource_type` to measure; the task id. Not started within
    `expires_s` it expires: the profile no longer waits for it by then."""
    result = (celery_app or app).send_task(PROFILE_TASK_NAME, args=[run_id, origin_id],
                                           queue=queue_for(resource_type), expires=expires_s)
    return str(result.id)


def revoke_profiles(task_ids: Sequence[str], celery_app: Celery | None = None) -> None:
    """Tell workers to drop profile tasks nobody waits for any more (best effort: a broker
    that is gone means no worker would take them either)."""
    if not task_ids:
        return
    try:
        (celery_app or app).control.revoke(list(task_ids))
    except Exception:  # the fallback is already stored; nothing more to do
        return
