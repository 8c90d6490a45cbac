"""Checkpoints: one part per process under `ROOT/step-NNNNNNNN/` (parts.py), and the
manifest that certifies a step, written last.

A step is sealed only by the attempt (one launch: `JobSpec.attempt`) that wrote every part
of it: each rank reports its part's size and content hash to the launcher when it has
written it (sealing.py), and the launcher writes `MANIFEST.json` with each part's size,
hash and attempt once every rank of this attempt reported that step. Folders of earlier
attempts, steps this run never reached, parts still being written are never sealed. A step
counts as complete when its manifest is there and every part it lists has that size; a
resume also checks every part's hash and, when the newest step fails, starts from the
newest one that passes, saying so (`resume_from`, `set_aside`). Manifests from before the
hashes (sizes only) are still read, by size. `job.json` records what the checkpoints belong
to, so a resume with another plan or model is refused instead of mixing states.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import torch

from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.parts import (
    HASH,
    MANIFEST,
    STEP_PREFIX,
    Root,
    Written,
    check_location,
    digest_of,
    fs_of,
    load_part,
    part_name,
    save_part,
    sizes,
    step_dir,
    steps,
    write_whole,
)
from heterps_core.runtime.spec import SkippedStep

__all__ = ["MANIFEST", "STEP_PREFIX", "Root", "Written", "check_location", "load_part",
           "save_part", "step_dir"]

JOB_FILE = "job.json"


def seal_step(root: Root, step: int, attempt: str, written: dict[int, Written]) -> str | None:
    """Write step `step`'s manifest from what every rank of `attempt` reported writing
    (`written`: rank -> part); None once sealed, else why not (a part is not there at the
    size its writer reported: replaced or cut since)."""
    held = sizes(root, step)
    where = step_dir(root, step)
    for rank, part in sorted(written.items()):
        name = part_name(rank)
        if held.get(name) != part.size:
            return (f"{where}/{name} is {held.get(name, 'missing, not')} bytes, its writer "
                    f"reported {part.size}")
    manifest = {
        "step": step,
        "world_size": len(written),
        "attempt": attempt,
        "hash": HASH,
        "parts": {part_name(rank): {"size": part.size, "hash": part.digest, "attempt": attempt}
                  for rank, part in sorted(written.items())},
        "sealed_at": time.time(),
    }
    fs, folder = fs_of(where)
    write_whole(fs, f"{folder}/{MANIFEST}", (json.dumps(manifest, indent=2) + "\n").encode())
    return None


def problem(root: Root, step: int, world_size: int, verify: bool = False) -> str | None:
    """Why step `step` cannot be resumed from (None: its manifest and every part are there
    at their sizes; with `verify`, also with their hashes, which reads every part)."""
    where = step_dir(root, step)
    try:
        held = sizes(root, step)
        if MANIFEST not in held:
            return (f"{where} has no {MANIFEST}: it is incomplete (the run stopped while "
                    "writing it, or a copy of it was cut short)")
        fs, folder = fs_of(where)
        manifest = json.loads(fs.cat_file(f"{folder}/{MANIFEST}"))
        if manifest.get("world_size") != world_size:
            return (f"{where} was written by {manifest.get('world_size')} processes, this "
                    f"job has {world_size}")
        for name, entry in manifest["parts"].items():
            # A manifest from before the hashes lists sizes only.
            size, digest = (entry, None) if isinstance(entry, int) else (entry["size"],
                                                                          entry["hash"])
            if name not in held:
                return f"{where}/{name} is missing (its manifest lists it)"
            if held[name] != size:
                return f"{where}/{name} is {held[name]} bytes, its manifest says {size}: truncated"
            if verify and digest is not None and digest_of(fs, f"{folder}/{name}") != digest:
                return (f"{where}/{name} does not match its manifest's {HASH} hash (same size, "
                        "other bytes: changed or corrupted after it was sealed)")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Looked at while a live run writes or prunes it (or a copy of it is unreadable).
        return f"{where} cannot be read as a whole checkpoint now ({type(exc).__name__}: {exc})"
    return None


def complete_steps(root: Root, world_size: int) -> list[int]:
    """Steps whose checkpoint is sealed and whole (by size), oldest first."""
    return [step for step in steps(root) if problem(root, step, world_size) is None]


def latest_complete(root: Root, world_size: int) -> int | None:
    found = complete_steps(root, world_size)
    return found[-1] if found else None


def _sealed(root: Root, step: int) -> bool:
    fs, folder = fs_of(step_dir(root, step))
    return bool(fs.exists(f"{folder}/{MANIFEST}"))


@dataclass(frozen=True)
class ResumeFrom:
    """Where a resume starts: `step`, and the newer steps it passed over, newest first."""

    step: int
    skipped: tuple[SkippedStep, ...] = ()


def resume_from(root: Root, world_size: int) -> ResumeFrom:
    """The newest checkpoint that passes verification (sizes and hashes; reads each part
    of the steps it tries once); step 0 when the folder holds none at all; refused
    (RunConfigError) when it holds only ones that fail."""
    found = steps(root)
    skipped: list[SkippedStep] = []
    for step in reversed(found):
        why = problem(root, step, world_size, verify=True)
        if why is None:
            return ResumeFrom(step, tuple(skipped))
        skipped.append(SkippedStep(step, why, damaged=_sealed(root, step)))
    if not found:
        return ResumeFrom(0)
    raise RunConfigError("resume", f"no complete checkpoint in {root} to resume from: "
                         f"{skipped[0].why}")


def set_aside(root: Root, start: int, skipped: tuple[SkippedStep, ...],
              attempt: str) -> str | None:
    """Move the damaged steps a resume from `start` passed over out of the way (renamed,
    never deleted: `step-N.damaged-ATTEMPT` is no longer a step) and say what happened, for
    the user; None: nothing was passed over."""
    if not skipped:
        return None
    notes = []
    for skip in skipped:
        note = f"step {skip.step}: {skip.why}"
        if skip.damaged:
            aside = f"{step_dir(root, skip.step)}.damaged-{attempt[:8]}"
            fs, folder = fs_of(step_dir(root, skip.step))
            fs.mv(folder, fs_of(aside)[1], recursive=True)
            note += f"; kept as {aside}"
        notes.append(note)
    return (f"resuming from step {start}, the newest verified checkpoint, not from step "
            f"{skipped[0].step}: " + "; ".join(notes))


def prune(root: Root, world_size: int, keep: int = 2) -> None:
    """Drop all but the newest `keep` complete checkpoints (and partial ones older than
    them); folders set aside as damaged are left for a person to look at."""
    complete = complete_steps(root, world_size)
    if len(complete) <= keep:
        return
    oldest_kept = complete[-keep]
    for step in steps(root):
        if step < oldest_kept:
            fs, folder = fs_of(step_dir(root, step))
            fs.rm(folder, recursive=True)


def check_job(root: Root, fingerprint: dict[str, Any]) -> None:
    """Record the job on first use; on a resume, refuse a different job."""
    fs, folder = fs_of(root)
    fs.makedirs(folder, exist_ok=True)
    path = f"{folder}/{JOB_FILE}"
    if not fs.exists(path):
        fs.pipe(path, (json.dumps(fingerprint, indent=2) + "\n").encode())
        return
    refuse_other_job(root, fingerprint)


def refuse_other_job(root: Root, fingerprint: dict[str, Any]) -> None:
    """Refuse a directory that records another job (reads only; nothing recorded: fine)."""
    fs, folder = fs_of(root)
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
               optimizer: torch.optim.Optimizer | None) -> Written:
    """A stage replica's part: its layers, its dense optimiser and the RNG it draws from."""
    state = {
        "layers": layers.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer else None,
        "rng": torch.get_rng_state(),
    }
    return save_part(root, step, rank, state)


def load_stage(root: Root, step: int, rank: int, layers: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> None:
    """Put back what `save_stage` wrote."""
    state = load_part(root, step, rank)
    layers.load_state_dict(state["layers"])
    if optimizer is not None and state["optimizer"] is not None:
        optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
