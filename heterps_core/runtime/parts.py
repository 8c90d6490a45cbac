"""Checkpoint parts on any fsspec location: where a step's parts live, writing one with its
content hash, reading one back, and what a folder holds. The manifest that certifies a
step (sealing, checking, resuming) is `checkpoint.py`.

ROOT is a directory every machine of the job reaches: a local or shared path
(`/mnt/shared/ckpt`, `file:///...`) or any fsspec URI (`s3://bucket/run`, `memory://...`
in tests; the protocol's package must be installed). Each rank writes its own part
(`rankR.pt`): atomically on a file system (temp file + rename), as one object put on an
object store, hashing the bytes as they go out (no second read).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from os import PathLike
from typing import IO, Any, cast

import fsspec
import torch
from fsspec.implementations.local import LocalFileSystem

from heterps_core.runtime.errors import RunConfigError

MANIFEST = "MANIFEST.json"
STEP_PREFIX = "step-"
HASH = "blake2b-256"  # the manifest's name for the content hash below
_CHUNK = 1 << 20

Root = str | PathLike[str]  # a path or an fsspec URI


@dataclass(frozen=True)
class Written:
    """What a rank wrote: the part's bytes and their hash (`HASH`, hex)."""

    size: int
    digest: str


def new_hash() -> Any:
    return hashlib.blake2b(digest_size=32)


def fs_of(root: Root) -> tuple[fsspec.AbstractFileSystem, str]:
    try:
        fs, path = fsspec.core.url_to_fs(str(root))
    except (ImportError, ValueError) as exc:
        raise RunConfigError("checkpoint_dir", f"{root}: {exc}") from None
    return fs, path.rstrip("/") or "/"


def check_location(root: Root) -> None:
    """Refuse a URI whose protocol is unknown or whose package is missing (compile time)."""
    fs_of(root)


def step_dir(root: Root, step: int) -> str:
    """The folder of step `step`'s parts (a path or URI like ROOT)."""
    return f"{str(root).rstrip('/')}/{STEP_PREFIX}{step:08d}"


def part_name(rank: int) -> str:
    return f"rank{rank}.pt"


class _Hashing:
    """A write-only stream that hashes and counts what passes through to `out`."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.hash = new_hash()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        self.out.write(data)
        return len(data)

    def flush(self) -> None:
        self.out.flush()


def save_part(root: Root, step: int, rank: int, state: dict[str, Any]) -> Written:
    """Write rank `rank`'s part of step `step`; returns its size and hash for the launcher."""
    fs, folder = fs_of(step_dir(root, step))
    fs.makedirs(folder, exist_ok=True)
    # A manifest here is another attempt's: this step is being written again, so it is not
    # sealed until this attempt seals it (its parts and the old ones are never mixed).
    if fs.exists(f"{folder}/{MANIFEST}"):
        fs.rm(f"{folder}/{MANIFEST}")
    final = f"{folder}/{part_name(rank)}"
    # A rename is atomic: a reader sees the whole part or none. An object appears whole
    # when it is closed.
    local = isinstance(fs, LocalFileSystem)
    target = f"{folder}/.{part_name(rank)}.tmp" if local else final
    with fs.open(target, "wb") as out:
        stream = _Hashing(out)
        torch.save(state, cast(IO[bytes], stream))  # it needs only write and flush
    if local:
        fs.mv(target, final)
    return Written(stream.size, stream.hash.hexdigest())


def load_part(root: Root, step: int, rank: int) -> dict[str, Any]:
    fs, folder = fs_of(step_dir(root, step))
    with fs.open(f"{folder}/{part_name(rank)}", "rb") as source:
        state = torch.load(source, weights_only=False)
    assert isinstance(state, dict)
    return state


def digest_of(fs: fsspec.AbstractFileSystem, path: str) -> str:
    """The `HASH` of a stored file (reads it once)."""
    digest = new_hash()
    with fs.open(path, "rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return str(digest.hexdigest())


def steps(root: Root) -> list[int]:
    """The steps ROOT holds a folder of, oldest first (set-aside folders are not steps)."""
    fs, folder = fs_of(root)
    if not fs.isdir(folder):
        return []
    found = []
    for entry in fs.ls(folder, detail=False):
        name = str(entry).rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX):].isdigit():
            found.append(int(name[len(STEP_PREFIX):]))
    return sorted(found)


def sizes(root: Root, step: int) -> dict[str, int]:
    """File name -> bytes of what a step's folder holds."""
    fs, folder = fs_of(step_dir(root, step))
    return {
        str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]: int(entry.get("size") or 0)
        for entry in fs.ls(folder, detail=True)
    }


def write_whole(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """A reader sees all of `data` at `path` or no file: a local file is renamed into place
    (an object store's object appears whole when written)."""
    if isinstance(fs, LocalFileSystem):
        head, name = path.rsplit("/", 1)
        tmp_path = f"{head}/.{name}.tmp"
        fs.pipe(tmp_path, data)
        fs.mv(tmp_path, path)
    else:
        fs.pipe(path, data)
