"""Runtime agents through Celery: a worker machine serves a job's remote stages.

Each worker machine runs `celery -A workers worker --queues heterps.res.<type>,...` for the
resource types it provides; a run whose binding has `remote` types calls `dispatch_agents`,
which enqueues one `heterps.runtime_agent` task per remote type on that type's queue. The
task is `heterps_core.runtime.agent.run_agent`: join the job's store, run the ranks the
launcher gives it, report their exit codes (contract: docs/operations.md).
"""

from __future__ import annotations

import socket
from collections.abc import Sequence

from celery import Task

from heterps_core.agents import (  # noqa: F401  (scripts import them from here: docs/operations.md)
    DEFAULT_JOIN_TIMEOUT_S,
    PROFILE_TASK,
    QUEUE_PREFIX,
    RUNTIME_TASK,
    agents_per_type,
    coordinator_address,
    queue_for,
    remote_units,
)
from webapp.background.broker import (  # noqa: F401  (the same)
    dispatch_agents,
    dispatch_profile,
    revoke_profiles,
    serving,
)
from workers.app import app


class AgentFailed(RuntimeError):
    """An agent could not serve its job; the message is what the task result shows."""


# Acked on receipt, not late: an agent belongs to one live job, so redelivering it after a
# worker crash would only join a store that is gone (and wait out its join timeout).
@app.task(bind=True, name=RUNTIME_TASK, acks_late=False, track_started=True)
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


# --- profiling on the resources' own machines (webapp/profiling/remote.py) ------------------


# Acked on receipt: a redelivered measurement after a crash would answer a wait that has
# moved on (the web side falls back to the roofline at its timeout).
@app.task(bind=True, name=PROFILE_TASK, acks_late=False)
def profile_agent(self: Task, run_id: int, origin_id: int) -> dict[str, object]:
    """Time profile run `run_id`'s model on this machine for the resource type of its
    origin row `origin_id`; ids only, both checked (a run or row gone is answered, not
    an error). What this machine cannot do is stored as the type's note."""
    if not (isinstance(run_id, int) and isinstance(origin_id, int)):
        raise ValueError("run_id, origin_id: must be integer ids")
    from webapp.profiling.remote import measure_here

    return measure_here(run_id, origin_id, str(self.request.hostname or socket.gethostname()))
