"""Checkpoints: one part per process under `ROOT/step-NNNNNNNN/`, a manifest written last.

ROOT is a directory every machine of the job reaches: a local or shared path
(`/mnt/shared/ckpt`, `file:///...`) or any fsspec URI (`s3://bucket/run`, `memory://...`
in tests; the protocol's package must be installed). Each rank writes its own part
(`rankR.pt`): atomically on a file system (temp file + rename), as one object put on an
object store. Once every rank's part is there the launcher seals the step: it writes
`MANIFEST.json` with each part's size, last. A step counts as complete only when its
manifest is there and every part it lists has that size, so a run killed mid-checkpoint,
or a copy cut short, is never resumed from. `job.json` records what the checkpoints
belong to, so a resume with another plan or model is refused instead of mixing states.
"""

from __future__ import annotations

import json
import time
from os import PathLike
from typing import Any

import fsspec
import torch
from fsspec.implementations.local import LocalFileSystem

from heterps_core.runtime.errors import RunConfigError

JOB_FILE = "job.json"
MANIFEST = "MANIFEST.json"
STEP_PREFIX = "step-"


Root = str | PathLike[str]  # a path or an fsspec URI


def _fs(root: Root) -> tuple[fsspec.AbstractFileSystem, str]:
    try:
        fs, path = fsspec.core.url_to_fs(str(root))
    except (ImportError, ValueError) as exc:
        raise RunConfigError("checkpoint_dir", f"{root}: {exc}") from None
    return fs, path.rstrip("/") or "/"


def check_location(root: Root) -> None:
    """Refuse a URI whose protocol is unknown or whose package is missing (compile time)."""
    _fs(root)


def step_dir(root: Root, step: int) -> str:
    """The folder of step `step`'s parts (a path or URI like ROOT)."""
    return f"{str(root).rstrip('/')}/{STEP_PREFIX}{step:08d}"


def _part(rank: int) -> str:
    return f"rank{rank}.pt"


def save_part(root: Root, step: int, rank: int, state: dict[str, Any]) -> None:
    fs, folder = _fs(step_dir(root, step))
    fs.makedirs(folder, exist_ok=True)
    final = f"{folder}/{_part(rank)}"
    if isinstance(fs, LocalFileSystem):
        # A rename is atomic: a reader sees the whole part or none.
        tmp = f"{folder}/.{_part(rank)}.tmp"
        with fs.open(tmp, "wb") as out:
            torch.save(state, out)
        fs.mv(tmp, final)
    else:
        with fs.open(final, "wb") as out:  # an object appears whole when it is closed
            torch.save(state, out)


def load_part(root: Root, step: int, rank: int) -> dict[str, Any]:
    fs, folder = _fs(step_dir(root, step))
    with fs.open(f"{folder}/{_part(rank)}", "rb") as source:
        state = torch.load(source, weights_only=False)
    assert isinstance(state, dict)
    return state


def _steps(root: Root) -> list[int]:
    fs, folder = _fs(root)
    if not fs.isdir(folder):
        return []
    steps = []
    for entry in fs.ls(folder, detail=False):
        name = str(entry).rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX):].isdigit():
            steps.append(int(name[len(STEP_PREFIX):]))
    return sorted(steps)


def _sizes(root: Root, step: int) -> dict[str, int]:
    """File name -> bytes of what a step's folder holds."""
    fs, folder = _fs(step_dir(root, step))
    return {
        str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]: int(entry.get("size") or 0)
        for entry in fs.ls(folder, detail=True)
    }


def seal(root: Root, world_size: int) -> list[int]:
    """Write the manifest of every step whose parts are all there (the launcher calls it);
    returns the steps sealed now."""
    sealed = []
    for step in _steps(root):
        held = _sizes(root, step)
        parts = [_part(r) for r in range(world_size)]
        if MANIFEST in held or not all(p in held for p in parts):
            continue
        manifest = {
            "step": step,
            "world_size": world_size,
            "parts": {p: held[p] for p in parts},
            "sealed_at": time.time(),
        }
        fs, folder = _fs(step_dir(root, step))
        _write_whole(fs, f"{folder}/{MANIFEST}", (json.dumps(manifest, indent=2) + "\n").encode())
        sealed.append(step)
    return sealed


def _write_whole(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """A reader sees all of `data` at `path` or no file: a local file is renamed into place
    (an object store's object appears whole when written)."""
    if isinstance(fs, LocalFileSystem):
        tmp = path.rsplit("/", 1)
        tmp_path = f"{tmp[0]}/.{tmp[1]}.tmp"
        fs.pipe(tmp_path, data)
        fs.mv(tmp_path, path)
    else:
        fs.pipe(path, data)


def problem(root: Root, step: int, world_size: int) -> str | None:
    """Why step `step` cannot be resumed from (None: its manifest and every part are there)."""
    where = step_dir(root, step)
    try:
        held = _sizes(root, step)
        if MANIFEST not in held:
            return (f"{where} has no {MANIFEST}: it is incomplete (the run stopped while "
                    "writing it, or a copy of it was cut short)")
        fs, folder = _fs(where)
        manifest = json.loads(fs.cat_file(f"{folder}/{MANIFEST}"))
    except (OSError, ValueError) as exc:
        # Looked at while a live run writes or prunes it (or a copy of it is unreadable).
        return f"{where} cannot be read as a whole checkpoint now ({type(exc).__name__}: {exc})"
    if manifest.get("world_size") != world_size:
        return (f"{where} was written by {manifest.get('world_size')} processes, this job "
                f"has {world_size}")
    for name, size in manifest["parts"].items():
        if name not in held:
            return f"{where}/{name} is missing (its manifest lists it)"
        if held[name] != size:
            return f"{where}/{name} is {held[name]} bytes, its manifest says {size}: truncated"
    return None


def complete_steps(root: Root, world_size: int) -> list[int]:
    """Steps whose checkpoint is sealed and whole, oldest first."""
    return [step for step in _steps(root) if problem(root, step, world_size) is None]


def latest_complete(root: Root, world_size: int) -> int | None:
    steps = complete_steps(root, world_size)
    return steps[-1] if steps else None


def resume_step(root: Root, world_size: int) -> int:
    """The step a resume starts from: the newest complete checkpoint; 0 when the folder
    holds none at all; refused (RunConfigError) when it holds only incomplete ones."""
    steps = _steps(root)
    for step in reversed(steps):
        if problem(root, step, world_size) is None:
            return step
    if not steps:
        return 0
    why = problem(root, steps[-1], world_size)
    raise RunConfigError("resume", f"no complete checkpoint in {root} to resume from: {why}")


def prune(root: Root, world_size: int, keep: int = 2) -> None:
    """Drop all but the newest `keep` complete checkpoints (and partial ones older than them)."""
    steps = complete_steps(root, world_size)
    if len(steps) <= keep:
        return
    oldest_kept = steps[-keep]
    for step in _steps(root):
        if step < oldest_kept:
            fs, folder = _fs(step_dir(root, step))
            fs.rm(folder, recursive=True)


def check_job(root: Root, fingerprint: dict[str, Any]) -> None:
    """Record the job on first use; on a resume, refuse a different job."""
    fs, folder = _fs(root)
    fs.makedirs(folder, exist_ok=True)
    path = f"{folder}/{JOB_FILE}"
    if not fs.exists(path):
        fs.pipe(path, (json.dumps(fingerprint, indent=2) + "\n").encode())
        return
    refuse_other_job(root, fingerprint)


def refuse_other_job(root: Root, fingerprint: dict[str, Any]) -> None:
    """Refuse a directory that records another job (reads only; nothing recorded: fine)."""
    fs, folder = _fs(root)
    path = f"{folder}/{JOB_FILE}"
    if not fs.exists(path):
        return
    recorded = json.loads(fs.cat_file(path))
    for key, value in fingerprint.items():
        if recorded.get(key) != value:
            raise RunConfigError(
                f"checkpoint.{key}",
                f"{root} holds checkpoints of another job ({key} was {recorded.get(key)!r}, "
                f"now {value!r}); use a new checkpoint directory",
            )


def checkpoint_due(root: Root | None, every: int | None, steps: int, boundary: int) -> bool:
    """Whether a stage writes its part after mini-batch `boundary`: every `every` and at the
    last one, when the job has a checkpoint directory."""
    if root is None:
        return False
    return boundary == steps or bool(every and boundary % every == 0)


def save_stage(root: Root, step: int, rank: int, layers: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> None:
    """A stage replica's part: its layers, its dense optimiser and the RNG it draws from."""
    state = {
        "layers": layers.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer else None,
        "rng": torch.get_rng_state(),
    }
    save_part(root, step, rank, state)


def load_stage(root: Root, step: int, rank: int, layers: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> None:
    """Put back what `save_stage` wrote."""
    state = load_part(root, step, rank)
    layers.load_state_dict(state["layers"])
    if optimizer is not None and state["optimizer"] is not None:
        optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
