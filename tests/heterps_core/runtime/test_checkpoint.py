from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
import torch

from heterps_core import rendezvous
from heterps_core.runtime import checkpoint
from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.parts import Written
from heterps_core.runtime.sealing import PartReports, Sealer

ATTEMPT = "attempt-a"


def _write(root: str | Path, step: int, ranks: range, fill: float = 0.0) -> dict[int, Written]:
    return {rank: checkpoint.save_part(root, step, rank,
                                       {"x": torch.full((100,), float(rank) + fill)})
            for rank in ranks}


def _seal(root: str | Path, step: int, ranks: range, attempt: str = ATTEMPT) -> None:
    """Write every part of `step` and seal it as the attempt that wrote them."""
    assert checkpoint.seal_step(root, step, attempt, _write(root, step, ranks)) is None


def test_only_sealed_steps_with_every_part_count_as_complete(tmp_path: Path) -> None:
    written = _write(tmp_path, 10, range(3))
    _write(tmp_path, 20, range(1))
    (Path(checkpoint.step_dir(tmp_path, 20)) / ".rank1.pt.tmp").write_bytes(b"half written")
    assert checkpoint.complete_steps(tmp_path, 3) == []  # every part, but no manifest yet
    assert checkpoint.seal_step(tmp_path, 10, ATTEMPT, written) is None
    assert checkpoint.complete_steps(tmp_path, 3) == [10]
    assert checkpoint.latest_complete(tmp_path, 3) == 10
    assert checkpoint.load_part(tmp_path, 10, 2)["x"][0].item() == 2
    assert checkpoint.latest_complete(tmp_path / "missing", 3) is None


def test_a_resume_refuses_a_checkpoint_without_its_manifest_or_with_a_cut_part(
    tmp_path: Path,
) -> None:
    _seal(tmp_path, 4, range(2))
    _seal(tmp_path, 8, range(2))
    # The newest is cut short after sealing (a copy that did not finish): named, skipped.
    part = Path(checkpoint.step_dir(tmp_path, 8)) / "rank1.pt"
    size = part.stat().st_size
    part.write_bytes(part.read_bytes()[: size // 2])
    assert checkpoint.problem(tmp_path, 8, 2) == (
        f"{checkpoint.step_dir(tmp_path, 8)}/rank1.pt is {size // 2} bytes, its manifest "
        f"says {size}: truncated"
    )
    assert checkpoint.resume_from(tmp_path, 2).step == 4  # the newest complete one
    # With the older one's manifest gone too, nothing complete is left: refused, with why.
    (Path(checkpoint.step_dir(tmp_path, 4)) / checkpoint.MANIFEST).unlink()
    with pytest.raises(RunConfigError) as refused:
        checkpoint.resume_from(tmp_path, 2)
    message = str(refused.value)
    assert message.startswith(f"resume: no complete checkpoint in {tmp_path} to resume from: ")
    assert "rank1.pt is" in message and "truncated" in message
    (Path(checkpoint.step_dir(tmp_path, 8)) / checkpoint.MANIFEST).unlink()
    with pytest.raises(RunConfigError, match=r"step-00000008 has no MANIFEST.json: it is "
                                             r"incomplete \(the run stopped while writing it"):
        checkpoint.resume_from(tmp_path, 2)
    assert checkpoint.resume_from(tmp_path / "empty", 2).step == 0  # nothing yet: from 0


@pytest.mark.parametrize("scheme", ["file", "memory"])
def test_checkpoints_go_to_fsspec_uris(tmp_path: Path, scheme: str) -> None:
    root = f"file://{tmp_path}/ckpt" if scheme == "file" else f"memory://ckpt-{uuid.uuid4().hex}"
    checkpoint.check_job(root, {"model": "ctr_dnn"})
    for step in (2, 4, 6):
        _seal(root, step, range(2))
    checkpoint.prune(root, 2, keep=2)
    assert checkpoint.complete_steps(root, 2) == [4, 6]
    assert checkpoint.load_part(root, 6, 1)["x"].sum().item() == 100.0
    fs, path = fsspec.core.url_to_fs(root)
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)) == [
        "job.json", "step-00000004", "step-00000006"
    ]
    if scheme == "file":
        assert checkpoint.latest_complete(f"{tmp_path}/ckpt", 2) == 6  # the same place


def test_an_unknown_checkpoint_location_names_the_field() -> None:
    with pytest.raises(RunConfigError, match=r"checkpoint_dir: nope://x: Protocol not known"):
        checkpoint.check_location("nope://x")


def test_prune_keeps_the_newest_complete_checkpoints(tmp_path: Path) -> None:
    for step in (2, 4, 6, 8):
        _seal(tmp_path, step, range(1))
    checkpoint.prune(tmp_path, 1, keep=2)
    assert checkpoint.complete_steps(tmp_path, 1) == [6, 8]


def test_a_directory_of_another_job_is_refused(tmp_path: Path) -> None:
    checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 1})
    checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 1})
    with pytest.raises(RunConfigError, match=r"checkpoint.seed: .* \(seed was 1, now 2\)"):
        checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 2})


def test_a_checkpoint_looked_at_while_it_is_written_or_pruned_is_incomplete(
    tmp_path: Path,
) -> None:
    """The web's restart looks at a live run's folder: a manifest caught half-written (seen
    in CI as an empty MANIFEST.json) or a step pruned under it is not complete, not a crash;
    and sealing leaves no half-written manifest to be seen."""
    _seal(tmp_path, 10, range(2))
    folder = Path(checkpoint.step_dir(tmp_path, 10))
    assert not list(folder.glob(".*.tmp"))
    assert checkpoint.complete_steps(tmp_path, 2) == [10]
    (folder / checkpoint.MANIFEST).write_text("")  # caught while written
    assert checkpoint.complete_steps(tmp_path, 2) == []
    assert "cannot be read as a whole checkpoint now" in str(
        checkpoint.problem(tmp_path, 10, 2))
    assert checkpoint.problem(tmp_path, 20, 2) is not None  # no such step: pruned


# --- sealing by the attempt that wrote every part (issue 23.2) -------------------------------


@pytest.fixture
def store() -> Iterator[rendezvous.dist.TCPStore]:
    """A real rendezvous store, as the launcher holds one per attempt."""
    server = rendezvous.serve()
    yield server


def _reporting(store, rank: int, attempt: str = ATTEMPT) -> PartReports:
    return PartReports(rendezvous.connect(f"127.0.0.1:{store.port}"), rank, attempt)


def test_a_step_is_sealed_only_when_every_rank_of_this_attempt_reported_it(
    tmp_path: Path, store
) -> None:
    sealer = Sealer(store, tmp_path, ATTEMPT, range(2))
    _write(tmp_path, 10, range(2))  # an earlier attempt's parts, every one of them
    assert sealer.poll() == []
    assert checkpoint.complete_steps(tmp_path, 2) == []
    ranks = [_reporting(store, rank) for rank in range(2)]
    written = _write(tmp_path, 20, range(2))
    ranks[0].report(20, written[0])
    assert sealer.poll() == []  # rank 1 has not reported it
    ranks[1].report(20, written[1])
    assert sealer.poll() == [20]
    assert checkpoint.complete_steps(tmp_path, 2) == [20]
    manifest = json.loads((Path(checkpoint.step_dir(tmp_path, 20)) / checkpoint.MANIFEST)
                          .read_text())
    assert manifest["attempt"] == ATTEMPT and manifest["hash"] == "blake2b-256"
    part = Path(checkpoint.step_dir(tmp_path, 20)) / "rank1.pt"
    assert manifest["parts"]["rank1.pt"] == {
        "size": part.stat().st_size, "attempt": ATTEMPT,
        "hash": hashlib.blake2b(part.read_bytes(), digest_size=32).hexdigest(),
    }  # hashed while written: the bytes on disk


def test_a_truncated_part_is_refused_and_the_resume_falls_back_keeping_it(
    tmp_path: Path,
) -> None:
    _seal(tmp_path, 4, range(2))
    _seal(tmp_path, 8, range(2))
    part = Path(checkpoint.step_dir(tmp_path, 8)) / "rank1.pt"
    size = part.stat().st_size
    part.write_bytes(part.read_bytes()[: size // 3])
    resume = checkpoint.resume_from(tmp_path, 2)
    assert resume.step == 4
    (skipped,) = resume.skipped
    assert skipped.step == 8 and skipped.damaged and "truncated" in skipped.why
    notice = checkpoint.set_aside(tmp_path, resume.step, resume.skipped, "0123456789ab")
    aside = f"{checkpoint.step_dir(tmp_path, 8)}.damaged-01234567"
    assert notice == (f"resuming from step 4, the newest verified checkpoint, not from step "
                      f"8: step 8: {skipped.why}; kept as {aside}")
    assert (Path(aside) / "rank1.pt").stat().st_size == size // 3  # kept, not deleted
    assert checkpoint.resume_from(tmp_path, 2) == checkpoint.ResumeFrom(4)


def test_a_part_changed_at_the_same_size_is_caught_by_its_hash(tmp_path: Path) -> None:
    _seal(tmp_path, 4, range(2))
    _seal(tmp_path, 8, range(2))
    part = Path(checkpoint.step_dir(tmp_path, 8)) / "rank0.pt"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    assert checkpoint.problem(tmp_path, 8, 2) is None  # the sizes alone cannot tell
    assert checkpoint.problem(tmp_path, 8, 2, verify=True) == (
        f"{checkpoint.step_dir(tmp_path, 8)}/rank0.pt does not match its manifest's "
        "blake2b-256 hash (same size, other bytes: changed or corrupted after it was sealed)")
    assert checkpoint.resume_from(tmp_path, 2).step == 4


def test_two_attempts_parts_are_never_mixed(tmp_path: Path, store) -> None:
    _seal(tmp_path, 10, range(2), attempt="attempt-a")
    assert checkpoint.complete_steps(tmp_path, 2) == [10]
    # Attempt B writes step 10 again: its first part unseals attempt A's step at once.
    sealer = Sealer(store, tmp_path, "attempt-b", range(2))
    b0 = _reporting(store, 0, "attempt-b")
    b0.report(10, _write(tmp_path, 10, range(1), fill=0.5)[0])
    assert checkpoint.complete_steps(tmp_path, 2) == []
    # A report of another attempt (rank 1's part is still A's) does not complete it.
    _reporting(store, 1, "attempt-a").report(10, _write(tmp_path, 10, range(1, 2))[1])
    assert sealer.poll() == [] and checkpoint.complete_steps(tmp_path, 2) == []
    b1 = _reporting(store, 1, "attempt-b")
    b1.report(10, _write(tmp_path, 10, range(1, 2), fill=0.5)[1])
    assert sealer.poll() == [10]
    assert checkpoint.resume_from(tmp_path, 2).step == 10  # B's hashes match B's parts
    assert checkpoint.load_part(tmp_path, 10, 1)["x"][0].item() == 1.5


def test_a_manifest_from_before_the_hashes_is_read_by_size(tmp_path: Path) -> None:
    written = _write(tmp_path, 6, range(2))
    old = {"step": 6, "world_size": 2, "sealed_at": 0.0,
           "parts": {f"rank{r}.pt": w.size for r, w in written.items()}}
    (Path(checkpoint.step_dir(tmp_path, 6)) / checkpoint.MANIFEST).write_text(json.dumps(old))
    assert checkpoint.resume_from(tmp_path, 2).step == 6
    part = Path(checkpoint.step_dir(tmp_path, 6)) / "rank1.pt"
    part.write_bytes(part.read_bytes()[:10])
    assert "truncated" in str(checkpoint.problem(tmp_path, 6, 2, verify=True))
