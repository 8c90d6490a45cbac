"""The launcher's half of the agent protocol: which ranks go to agents, handing the joined
agents their ranks (round-robin per resource type), and reading their exit reports.

The agent's half (joining, running the ranks, heartbeats) is `agent.py`; an agent's
record `agents/I` = {"name", "provides", "gloo"} (its machine's name and the interface its
processes' gloo uses, named in failure messages); the keys are in
heterps_core.rendezvous. Kept apart so that the launcher and the liveness checks depend on
the protocol's data, not on the agent program.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.runtime.spec import JobSpec, RankSpec


def is_remote(rank: RankSpec) -> bool:
    return rank.target.startswith("remote")


# Set to 0, every shard runs as a process of its own (the wire path), co-located or not.
IN_PROCESS_ENV = "HETERPS_PS_IN_PROCESS"


def in_process_shards(spec: JobSpec, table_layers: Sequence[int]) -> JobSpec:
    """`spec` with its shards served inside the one stage process that uses them, when
    there is exactly one: every table (at the layers `table_layers`) belongs to one stage,
    that stage has one replica, and it runs on the shards' machine (both on the
    launcher's: neither is handed to an agent). Such a shard has one client, so its sync
    rules hold without waiting (ps.py) and the gloo round trip buys nothing.

    Every shard holds rows of every table (row g on shard g mod n), so every shard has the
    same clients: either all shards qualify or none does."""
    shards = [r for r in spec.ranks if r.role == "ps"]
    owners = {next(s for s, st in enumerate(spec.stages) if st.first <= layer <= st.last)
              for layer in table_layers}
    if not shards or len(owners) != 1 or os.environ.get(IN_PROCESS_ENV) == "0":
        return spec
    (stage,) = owners
    clients = spec.stage_ranks(stage)
    if len(clients) != 1 or is_remote(spec.ranks[clients[0]]) or any(map(is_remote, shards)):
        return spec
    ranks = tuple(replace(r, host=clients[0]) if r.role == "ps" else r for r in spec.ranks)
    return replace(spec, ranks=ranks)


def launched_here(rank: RankSpec) -> bool:
    """Whether the launcher starts `rank`'s process itself (not an agent; not in-process)."""
    return rank.host < 0 and not is_remote(rank)


def resource_of(spec: JobSpec, rank: RankSpec) -> str:
    """The resource type a rank runs on (a spec from before ranks named theirs: the stage's)."""
    return rank.resource or (spec.stages[rank.stage].resource if rank.role == "stage" else "")


def assign(store: dist.Store, spec: JobSpec, remote: Sequence[RankSpec]) -> bool:
    """Once agents cover every remote resource type, give each its ranks (round-robin)."""
    joined = int(store.add(keys.AGENTS_JOINED, 0))
    agents = [
        json.loads(store.get(keys.agent(i))) for i in range(joined) if store.check([keys.agent(i)])
    ]
    by_type: dict[str, list[int]] = {}
    for i, agent in enumerate(agents):
        for resource in agent["provides"]:
            by_type.setdefault(resource, []).append(i)
    needed = {resource_of(spec, r) for r in remote}
    if not needed <= by_type.keys():
        return False
    plan: dict[int, list[int]] = {i: [] for i in range(len(agents))}
    handed: dict[str, int] = {}  # per type, so each type's ranks spread over its agents
    for rank in remote:
        resource = resource_of(spec, rank)
        hosts = by_type[resource]
        n = handed[resource] = handed.get(resource, -1) + 1
        plan[hosts[n % len(hosts)]].append(rank.rank)
    for i, ranks in plan.items():
        store.set(keys.agent_ranks(i), json.dumps(ranks))
    return True


class Handout:
    """The launcher's wait for agents: once the joined agents cover every remote resource
    type, each is handed its ranks (`assign`); past `timeout_s` without, `overdue` says
    which types no agent provided."""

    def __init__(self, spec: JobSpec, timeout_s: float) -> None:
        self.spec = spec
        self.remote = [r for r in spec.ranks if is_remote(r)]
        self.done = not self.remote
        self.timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s

    def poll(self, store: dist.Store) -> bool:
        """Hand the ranks out if the agents now cover them: True on the call that does."""
        if self.done:
            return False
        self.done = assign(store, self.spec, self.remote)
        return self.done

    def overdue(self) -> str | None:
        if self.done or time.monotonic() <= self._deadline:
            return None
        needed = sorted({resource_of(self.spec, r) for r in self.remote})
        return f"no worker agent for {', '.join(needed)} joined within {self.timeout_s:g} s"


@dataclass(frozen=True)
class AgentInfo:
    index: int
    name: str
    ranks: tuple[int, ...]
    gloo: str = ""  # the interface its processes' gloo uses, as the agent described it


def assigned(store: dist.Store) -> list[AgentInfo]:
    """The agents that joined and were handed their ranks (after `assign`)."""
    out = []
    for i in range(int(store.add(keys.AGENTS_JOINED, 0))):
        if store.check([keys.agent(i), keys.agent_ranks(i)]):
            said = json.loads(store.get(keys.agent(i)))
            ranks = tuple(json.loads(store.get(keys.agent_ranks(i))))
            out.append(AgentInfo(i, said["name"], ranks, str(said.get("gloo") or "")))
    return out


def agent_of(store: dist.Store, rank: int) -> AgentInfo | None:
    """The agent (machine) that was handed `rank`; None for the launcher's own ranks."""
    return next((agent for agent in assigned(store) if rank in agent.ranks), None)


def exit_of(store: dist.Store, rank: int) -> int | None:
    """The exit code an agent reported for `rank`, or None while it runs."""
    key = keys.exit_code(rank)
    return int(store.get(key)) if store.check([key]) else None
