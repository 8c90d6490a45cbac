from __future__ import annotations

from pathlib import Path

import pytest
import torch

from heterps_core.runtime import checkpoint
from heterps_core.runtime.errors import RunConfigError


def test_only_steps_with_every_part_count_as_complete(tmp_path: Path) -> None:
    for rank in range(3):
        checkpoint.save_part(tmp_path, 10, rank, {"x": torch.tensor([rank])})
    checkpoint.save_part(tmp_path, 20, 0, {"x": torch.tensor([0])})
    (checkpoint.step_dir(tmp_path, 20) / ".rank1.pt.tmp").write_bytes(b"half written")
    assert checkpoint.complete_steps(tmp_path, 3) == [10]
    assert checkpoint.latest_complete(tmp_path, 3) == 10
    assert checkpoint.load_part(tmp_path, 10, 2)["x"].item() == 2
    assert checkpoint.latest_complete(tmp_path / "missing", 3) is None


def test_prune_keeps_the_newest_complete_checkpoints(tmp_path: Path) -> None:
    for step in (2, 4, 6, 8):
        checkpoint.save_part(tmp_path, step, 0, {})
    checkpoint.prune(tmp_path, 1, keep=2)
    assert checkpoint.complete_steps(tmp_path, 1) == [6, 8]


def test_a_directory_of_another_job_is_refused(tmp_path: Path) -> None:
    checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 1})
    checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 1})
    with pytest.raises(RunConfigError, match=r"checkpoint.seed: .* \(seed was 1, now 2\)"):
        checkpoint.check_job(tmp_path, {"model": "ctr_dnn", "seed": 2})
