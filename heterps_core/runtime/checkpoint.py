"""Checkpoints: one file per process under `DIR/step-NNNNNNNN/`, written atomically.

A step's checkpoint is complete when every rank's part is there; a process that dies
mid-write leaves only a temporary file, so the last complete checkpoint stays intact.
`job.json` records what the checkpoints belong to, so a resume with another plan or model
is refused instead of silently mixing states.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from heterps_core.runtime.errors import RunConfigError

JOB_FILE = "job.json"


def step_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"step-{step:08d}"


def save_part(root: str | Path, step: int, rank: int, state: dict[str, Any]) -> None:
    folder = step_dir(root, step)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"rank{rank}.pt"
    tmp = folder / f".rank{rank}.pt.tmp"
    torch.save(state, tmp)
    os.replace(tmp, final)


def load_part(root: str | Path, step: int, rank: int) -> dict[str, Any]:
    state = torch.load(step_dir(root, step) / f"rank{rank}.pt", weights_only=False)
    assert isinstance(state, dict)
    return state


def complete_steps(root: str | Path, world_size: int) -> list[int]:
    """Steps whose checkpoint has a part from every rank, oldest first."""
    folder = Path(root)
    if not folder.is_dir():
        return []
    steps = []
    for child in folder.glob("step-*"):
        if not child.name[5:].isdigit():
            continue
        if all((child / f"rank{r}.pt").is_file() for r in range(world_size)):
            steps.append(int(child.name[5:]))
    return sorted(steps)


def latest_complete(root: str | Path, world_size: int) -> int | None:
    steps = complete_steps(root, world_size)
    return steps[-1] if steps else None


def prune(root: str | Path, world_size: int, keep: int = 2) -> None:
    """Drop all but the newest `keep` complete checkpoints (and partial ones older than them)."""
    steps = complete_steps(root, world_size)
    if len(steps) <= keep:
        return
    oldest_kept = steps[-keep]
    for child in Path(root).glob("step-*"):
        if child.name[5:].isdigit() and int(child.name[5:]) < oldest_kept:
            shutil.rmtree(child, ignore_errors=True)


def check_job(root: str | Path, fingerprint: dict[str, Any]) -> None:
    """Record the job on first use; on a resume, refuse a different job."""
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JOB_FILE
    if not path.exists():
        path.write_text(json.dumps(fingerprint, indent=2) + "\n")
        return
    refuse_other_job(root, fingerprint)


def refuse_other_job(root: str | Path, fingerprint: dict[str, Any]) -> None:
    """Refuse a directory that records another job (reads only; nothing recorded: fine)."""
    path = Path(root) / JOB_FILE
    if not path.exists():
        return
    recorded = json.loads(path.read_text())
    for key, value in fingerprint.items():
        if recorded.get(key) != value:
            raise RunConfigError(
                f"checkpoint.{key}",
                f"{root} holds checkpoints of another job ({key} was {recorded.get(key)!r}, "
                f"now {value!r}); use a new checkpoint directory",
            )


def checkpoint_due(root: str | Path | None, every: int | None, steps: int, boundary: int) -> bool:
    """Whether a stage writes its part after mini-batch `boundary`: every `every` and at the
    last one, when the job has a checkpoint directory."""
    if root is None:
        return False
    return boundary == steps or bool(every and boundary % every == 0)


def save_stage(root: str | Path, step: int, rank: int, layers: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> None:
    """A stage replica's part: its layers, its dense optimiser and the RNG it draws from."""
    state = {
        "layers": layers.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer else None,
        "rng": torch.get_rng_state(),
    }
    save_part(root, step, rank, state)


def load_stage(root: str | Path, step: int, rank: int, layers: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> None:
    """Put back what `save_stage` wrote."""
    state = load_part(root, step, rank)
    layers.load_state_dict(state["layers"])
    if optimizer is not None and state["optimizer"] is not None:
        optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
