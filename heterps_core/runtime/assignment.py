"""The launcher's half of the agent protocol: which ranks go to agents, handing the joined
agents their ranks (round-robin per resource type), and reading their exit reports.

The agent's half (joining, running the ranks, heartbeats) is `agent.py`; the keys are in
heterps_core.rendezvous. Kept apart so that the launcher and the liveness checks depend on
the protocol's data, not on the agent program.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.runtime.spec import JobSpec, RankSpec


def is_remote(rank: RankSpec) -> bool:
    return rank.target.startswith("remote")


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


def assigned(store: dist.Store) -> list[AgentInfo]:
    """The agents that joined and were handed their ranks (after `assign`)."""
    out = []
    for i in range(int(store.add(keys.AGENTS_JOINED, 0))):
        if store.check([keys.agent(i), keys.agent_ranks(i)]):
            name = json.loads(store.get(keys.agent(i)))["name"]
            out.append(AgentInfo(i, name, tuple(json.loads(store.get(keys.agent_ranks(i))))))
    return out


def exit_of(store: dist.Store, rank: int) -> int | None:
    """The exit code an agent reported for `rank`, or None while it runs."""
    key = keys.exit_code(rank)
    return int(store.get(key)) if store.check([key]) else None
