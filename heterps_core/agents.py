"""What a job's agents are, independent of how they are delivered: the queue each resource
type's machines consume, how many agents a type gets, which processes they host and the
address they dial. The delivery (Celery) is in `webapp/background/broker.py` and the tasks
in `workers/agents.py` (contract: docs/operations.md)."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch: only where a job actually runs
    from heterps_core.runtime.spec import JobSpec

QUEUE_PREFIX = "heterps.res."
RUNTIME_TASK = "heterps.runtime_agent"
PROFILE_TASK = "heterps.profile_agent"
DEFAULT_JOIN_TIMEOUT_S = 60.0


def queue_for(resource_type: str) -> str:
    """The Celery queue of the machines that provide `resource_type`."""
    if not resource_type.strip():
        raise ValueError("resource_type: must be a non-empty resource type name")
    return f"{QUEUE_PREFIX}{resource_type.strip()}"


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
