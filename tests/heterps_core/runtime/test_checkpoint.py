from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest
import torch

from heterps_core.runtime import checkpoint
from heterps_core.runtime.errors import RunConfigError


def _write(root: str | Path, step: int, ranks: range) -> None:
    for rank in ranks:
        checkpoint.save_part(root, step, rank, {"x": torch.full((100,), float(rank))})


def test_only_sealed_steps_with_every_part_count_as_complete(tmp_path: Path) -> None:
    _write(tmp_path, 10, range(3))
    _write(tmp_path, 20, range(1))
    (Path(checkpoint.step_dir(tmp_path, 20)) / ".rank1.pt.tmp").write_bytes(b"half written")
    assert checkpoint.complete_steps(tmp_path, 3) == []  # every part, but no manifest yet
    assert checkpoint.seal(tmp_path, 3) == [10]  # step 20 lacks two parts: not sealed
    assert checkpoint.seal(tmp_path, 3) == []  # sealed once
    assert checkpoint.complete_steps(tmp_path, 3) == [10]
    assert checkpoint.latest_complete(tmp_path, 3) == 10
    assert checkpoint.load_part(tmp_path, 10, 2)["x"][0].item() == 2
    assert checkpoint.latest_complete(tmp_path / "missing", 3) is None


def test_a_resume_refuses_a_checkpoint_without_its_manifest_or_with_a_cut_part(
    tmp_path: Path,
) -> None:
    _write(tmp_path, 4, range(2))
    _write(tmp_path, 8, range(2))
    checkpoint.seal(tmp_path, 2)
    # The newest is cut short after sealing (a copy that did not finish): named, skipped.
    part = Path(checkpoint.step_dir(tmp_path, 8)) / "rank1.pt"
    size = part.stat().st_size
    part.write_bytes(part.read_bytes()[: size // 2])
    assert checkpoint.problem(tmp_path, 8, 2) == (
        f"{checkpoint.step_dir(tmp_path, 8)}/rank1.pt is {size // 2} bytes, its manifest "
        f"says {size}: truncated"
    )
    assert checkpoint.resume_step(tmp_path, 2) == 4  # the newest complete one
    # With the older one's manifest gone too, nothing complete is left: refused, with why.
    (Path(checkpoint.step_dir(tmp_path, 4)) / checkpoint.MANIFEST).unlink()
    with pytest.raises(RunConfigError) as refused:
        checkpoint.resume_step(tmp_path, 2)
    message = str(refused.value)
    assert message.startswith(f"resume: no complete checkpoint in {tmp_path} to resume from: ")
    assert "rank1.pt is" in message and "truncated" in message
    (Path(checkpoint.step_dir(tmp_path, 8)) / checkpoint.MANIFEST).unlink()
    with pytest.raises(RunConfigError, match=r"step-00000008 has no MANIFEST.json: it is "
                                             r"incomplete \(the run stopped while writing it"):
        checkpoint.resume_step(tmp_path, 2)
    assert checkpoint.resume_step(tmp_path / "empty", 2) == 0  # nothing yet: from the start


@pytest.mark.parametrize("scheme", ["file", "memory"])
def test_checkpoints_go_to_fsspec_uris(tmp_path: Path, scheme: str) -> None:
    root = f"file://{tmp_path}/ckpt" if scheme == "file" else f"memory://ckpt-{uuid.uuid4().hex}"
    checkpoint.check_job(root, {"model": "ctr_dnn"})
    for step in (2, 4, 6):
        _write(root, step, range(2))
    assert checkpoint.seal(root, 2) == [2, 4, 6]
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
        checkpoint.save_part(tmp_path, step, 0, {})
    checkpoint.seal(tmp_path, 1)
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
    _write(tmp_path, 10, range(2))
    assert checkpoint.seal(tmp_path, 2) == [10]
    folder = Path(checkpoint.step_dir(tmp_path, 10))
    assert not list(folder.glob(".*.tmp"))
    assert checkpoint.complete_steps(tmp_path, 2) == [10]
    (folder / checkpoint.MANIFEST).write_text("")  # caught while written
    assert checkpoint.complete_steps(tmp_path, 2) == []
    assert "cannot be read as a whole checkpoint now" in str(
        checkpoint.problem(tmp_path, 10, 2))
    assert checkpoint.problem(tmp_path, 20, 2) is not None  # no such step: pruned
