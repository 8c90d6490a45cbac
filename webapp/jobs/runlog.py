"""A job's log: one text file per run, `run-N/job.log`, beside the runtime's own logs
(`rankK.log`) and checkpoints in the run's folder.

A line is appended to its run's file (one `write`, no lock: appends of a line are atomic
on a local file system, and only the run's worker and the web server's approve, restart
and cancel write to it). Pages read the tail; nothing rewrites a file. The web server and
the workers must share `VAR_DIR` to see each other's lines (as for checkpoints).

Pure file functions: the model imports this module (`Job.log`), so nothing here imports
the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from django.conf import settings

FILE = "job.log"
TAIL_BYTES = 16 * 1024  # what the job page shows of the latest run's log


class LoggedJob(Protocol):
    """What the log needs of a job (the model, or a draft not saved yet)."""

    @property
    def pk(self) -> int | None: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def runs(self) -> int: ...


def run_dir(job: LoggedJob, run: int) -> Path:
    """Run `run`'s folder: logs and checkpoints. It names the job's id and creation time: a
    database made afresh numbers its jobs from 1 again, and job 1 must not find (and be
    refused by) the checkpoints of an earlier database's job 1."""
    made = job.created_at.strftime("%Y%m%dT%H%M%S%f") if job.created_at else "draft"
    return Path(settings.VAR_DIR) / "jobs" / f"{job.pk}-{made}" / f"run-{run}"


def path(job: LoggedJob, run: int) -> Path:
    return run_dir(job, run) / FILE


def current_run(job: LoggedJob) -> int:
    """The run a line belongs to now: the latest (run 1 while the job is being approved)."""
    return max(job.runs, 1)


def write(job: LoggedJob, run: int, line: str) -> None:
    """Append one stamped line (UTC) to run `run`'s log."""
    target = path(job, run)
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    with target.open("a", encoding="utf-8") as out:
        out.write(f"{stamp} {line}\n")


@dataclass(frozen=True)
class Tail:
    """The end of one run's log: `text` (whole lines), the file's `size` in bytes, and
    whether earlier bytes were left out (`cut`)."""

    run: int
    text: str
    size: int
    cut: bool


def tail(job: LoggedJob, run: int, limit: int | None = TAIL_BYTES) -> Tail:
    """The last `limit` bytes of run `run`'s log, from a line's start (None: all of it)."""
    try:
        with path(job, run).open("rb") as source:
            size = source.seek(0, 2)
            start = 0 if limit is None else max(0, size - limit)
            source.seek(start)
            data = source.read()
    except FileNotFoundError:
        return Tail(run=run, text="", size=0, cut=False)
    if start > 0:
        data = data.partition(b"\n")[2]  # the first line was cut: start at the next
    return Tail(run=run, text=data.decode("utf-8", errors="replace"), size=size,
                cut=start > 0)


def text(job: LoggedJob) -> str:
    """Every run's log, oldest run first."""
    return "".join(tail(job, run, None).text for run in range(1, current_run(job) + 1))
