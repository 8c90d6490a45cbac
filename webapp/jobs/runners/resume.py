"""Resuming a run from the checkpoint an earlier run of the same job left behind.

Each run checkpoints under its own folder (`runners.pipeline.checkpoint_dir`). A restart of
a job whose latest run failed or was cancelled names that run's newest complete checkpoint
(`ResumePoint`, in the work record's params); the new run links that step into its own
folder before it starts, so every run's folder stays whole by itself (a restart of the
restart finds it there) and no earlier run's files are written to or pruned.

Hard links copy no bytes and are safe here: the runtime never rewrites a part in place (a
part is written to a temporary file and renamed over; old steps are removed whole), so a
linked file keeps its content in both folders.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heterps_core.runtime import checkpoint


@dataclass(frozen=True)
class ResumePoint:
    """Step `step` of run `run`'s checkpoint folder."""

    run: int
    step: int

    def to_params(self) -> dict[str, int]:
        return {"run": self.run, "step": self.step}

    @classmethod
    def from_params(cls, data: Any) -> ResumePoint | None:
        return None if not data else cls(run=int(data["run"]), step=int(data["step"]))

    def text(self) -> str:
        return f"step {self.step} of run {self.run}'s checkpoint"


def newest_checkpoint(folder: Path, below: int) -> int | None:
    """The newest complete checkpoint in `folder` before step `below` (None: none).

    Complete by its own manifest (sealed, every part there at its size). Whether it fits
    the run about to resume from it (same plan, same processes) is the runtime's check when
    that run compiles, so a mismatch is refused with the runtime's words, not skipped."""
    for step in sorted(_steps(folder), reverse=True):
        if step >= below:
            continue  # a checkpoint at the last step leaves nothing to resume
        world = _manifest_world_size(folder, step)
        if world is not None and checkpoint.problem(folder, step, world) is None:
            return step
    return None


def link_step(source: Path, step: int, target: Path) -> None:
    """Put step `step` of `source` (and the job record it belongs to) into `target`.

    The step is assembled under a hidden name and renamed into place with its manifest, so a
    copy cut short is never taken for a complete checkpoint."""
    target.mkdir(parents=True, exist_ok=True)
    job_file = source / checkpoint.JOB_FILE
    if job_file.exists() and not (target / checkpoint.JOB_FILE).exists():
        shutil.copyfile(job_file, target / checkpoint.JOB_FILE)
    src = Path(checkpoint.step_dir(source, step))
    dst = Path(checkpoint.step_dir(target, step))
    if dst.exists():
        return  # an earlier attempt of this run linked it already
    partial = target / f".{dst.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for part in sorted(src.iterdir()):
        if part.name != checkpoint.MANIFEST and part.is_file():
            _link_or_copy(part, partial / part.name)
    shutil.copyfile(src / checkpoint.MANIFEST, partial / checkpoint.MANIFEST)
    partial.rename(dst)


def unlink_step(target: Path, step: int) -> None:
    """Remove what `link_step` put into `target` (the earlier run's folder is untouched)."""
    shutil.rmtree(checkpoint.step_dir(target, step), ignore_errors=True)
    (target / checkpoint.JOB_FILE).unlink(missing_ok=True)


def _steps(folder: Path) -> list[int]:
    prefix = checkpoint.STEP_PREFIX
    if not folder.is_dir():
        return []
    return [int(p.name[len(prefix):]) for p in folder.iterdir()
            if p.is_dir() and p.name.startswith(prefix) and p.name[len(prefix):].isdigit()]


def _manifest_world_size(folder: Path, step: int) -> int | None:
    try:
        manifest = json.loads((Path(checkpoint.step_dir(folder, step))
                               / checkpoint.MANIFEST).read_text())
        return int(manifest["world_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not sealed (or not readable): not a checkpoint to resume from


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: copy the bytes
        shutil.copy2(source, target)
