"""Why a run failed, in one message: the machine that was lost, or the process to blame
and what it said, and how many failed after it.

A process an agent ran is named with where it ran (`remote_where`: the agent's machine,
pid, host).
Peers of a dead process fail soon after it with connection errors, so the first failure
seen is not always the cause: a lost machine (its processes died with it and report
nothing) is blamed first, then a process killed by a signal, else the first one seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch.distributed as dist

from heterps_core import processes
from heterps_core import rendezvous as keys
from heterps_core.runtime import netif
from heterps_core.runtime.assignment import assigned, is_remote
from heterps_core.runtime.liveness import where_text
from heterps_core.runtime.spec import JobSpec


def lost_message(lost: str, exited: Mapping[int, int], checkpoint: str) -> str:
    """A lost machine's message (`Liveness.lost_machine`), with the last checkpoint."""
    others = sum(1 for code in exited.values() if code != 0)
    message = lost + checkpoint
    if others:
        message += f" ({others} other process{'es' if others > 1 else ''} failed after it)"
    return message


def culprit_message(
    spec: JobSpec, exited: Mapping[int, int], failed: Sequence[int],
    said: Callable[[int], str], checkpoint: str, where: Callable[[int], str] = lambda _: "",
) -> str:
    """The failed process to blame (one killed by a signal first), `where` it ran, how it
    ended and what it `said`, how many stopped after it, then the last checkpoint."""
    killed = [r for r in failed if exited[r] < 0]
    culprit = (killed or failed)[0]
    others = sum(1 for r, c in exited.items() if c != 0 and r != culprit)
    place = where(culprit)
    message = (f"{spec.ranks[culprit].describe()}{f' ({place})' if place else ''} "
               f"{processes.exit_text(exited[culprit])}")
    detail = said(culprit)
    if detail:
        message += f": {detail}"
    if others:
        message += f" ({others} other process{'es' if others > 1 else ''} stopped after it)"
    return message + checkpoint


def remote_where(store: dist.Store, spec: JobSpec, rank: int) -> str:
    """Where a rank an agent ran is (liveness.where_text: its machine, pid and host); the
    launcher's own ranks need none (their pids are the launcher's `pids`)."""
    return where_text(store, rank) if is_remote(spec.ranks[rank]) else ""


def error_text(store: dist.Store, log_dir: Path, rank: int, local_gloo: str = "") -> str:
    """What a failed process said: the error it wrote into the store, else its log's last
    line (a crash before it could write one). A gloo connection error gets `gloo_hint`: the
    interface every machine's gloo used (`local_gloo`: the launcher's, then each agent's)."""
    if store.check([keys.error(rank)]):
        text = store.get(keys.error(rank)).decode()
    else:
        log = log_dir / f"rank{rank}.log"
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        text = lines[-1] if lines else ""
    if not is_gloo_connection_error(text):
        return text
    used = [("the launcher's machine", local_gloo)]
    used += [(f"machine {agent.name}", agent.gloo) for agent in assigned(store)]
    return text + gloo_hint(used)


# How gloo's failures to reach a peer read (torch 2.13: "Gloo connectFullMesh failed with
# [.../pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[...]").
GLOO_CONNECTION_MARKS = ("connectFullMesh", "timed out connecting", "gloo/transport/tcp")


def is_gloo_connection_error(text: str) -> bool:
    return any(mark in text for mark in GLOO_CONNECTION_MARKS)


def gloo_hint(used: Sequence[tuple[str, str]]) -> str:
    """Where to look when gloo cannot connect: the interface each machine's gloo used (the
    address its peers were told to dial)."""
    each = "; ".join(f"{who}: {interface or f'no {netif.ENV} (the address of its host name)'}"
                     for who, interface in used)
    return (f" [gloo could not connect; interfaces used: {each}. Set {netif.ENV} on each "
            f"machine to the interface that reaches the others]")
