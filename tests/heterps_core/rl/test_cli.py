import json

import pytest

from heterps_core.cli import main
from heterps_core.rl.checkpoint import load_policy


@pytest.mark.slow
def test_train_policy_writes_a_loadable_checkpoint_reproducibly(tmp_path, capsys) -> None:
    paths = [tmp_path / "a.pt", tmp_path / "b.pt"]
    for out in paths:
        code = main(["train-policy", "--updates", "2", "--pool", "4", "--imitation-steps", "3",
                     "--output", str(out), "--json"])
        assert code == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["updates"] == 2 and summary["pool_size"] == 4
    _, meta = load_policy(paths[0])
    assert meta["seed"] == 0 and meta["imitation_steps"] == 3
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_train_policy_rejects_bad_arguments(tmp_path, capsys) -> None:
    assert main(["train-policy", "--updates", "0"]) == 2
    assert "--updates: must be at least 1" in capsys.readouterr().err
    missing = tmp_path / "nowhere" / "p.pt"
    assert main(["train-policy", "--output", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err
