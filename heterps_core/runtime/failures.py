"""Why a run failed, in one message: the machine that was lost, or the process to blame
and what it said, and how many failed after it.

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
    said: Callable[[int], str], checkpoint: str,
) -> str:
    """The failed process to blame (one killed by a signal first), how it ended and what it
    `said`, how many stopped after it, then the last checkpoint."""
    killed = [r for r in failed if exited[r] < 0]
    culprit = (killed or failed)[0]
    others = sum(1 for r, c in exited.items() if c != 0 and r != culprit)
    message = f"{spec.ranks[culprit].describe()} {processes.exit_text(exited[culprit])}"
    detail = said(culprit)
    if detail:
        message += f": {detail}"
    if others:
        message += f" ({others} other process{'es' if others > 1 else ''} stopped after it)"
    return message + checkpoint


def error_text(store: dist.Store, log_dir: Path, rank: int) -> str:
    """What a failed process said: the error it wrote into the store, else its log's last
    line (a crash before it could write one)."""
    if store.check([keys.error(rank)]):
        return store.get(keys.error(rank)).decode()
    log = log_dir / f"rank{rank}.log"
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else ""
