import json
from pathlib import Path

import pytest

from heterps_core.cli import main
from heterps_core.rl.checkpoint import load_policy


@pytest.mark.slow
def test_train_policy_writes_a_loadable_checkpoint_reproducibly(tmp_path, capsys) -> None:
    paths = [tmp_path / "a.pt", tmp_path / "b.pt"]
    for out in paths:
        code = main(["train-policy", "--updates", "2", "--pool", "4",
                     "--output", str(out), "--json"])
        assert code == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["updates"] == 2 and summary["pool_size"] == 4
    _, meta = load_policy(paths[0])
    assert meta["seed"] == 0 and meta["labels"].startswith("none")
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_train_policy_rejects_bad_arguments(tmp_path, capsys) -> None:
    assert main(["train-policy", "--updates", "0"]) == 2
    assert "--updates: must be at least 1" in capsys.readouterr().err
    missing = tmp_path / "nowhere" / "p.pt"
    assert main(["train-policy", "--output", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err


EXAMPLE = Path(__file__).resolve().parents[1] / "schedulers" / "data" / "tiny.json"


def _plan(capsys, *flags: str) -> dict:
    code = main(["plan", str(EXAMPLE), "--scheduler", "rl", "--json", "--budget-s", "1.5",
                 *flags])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_plan_policy_only_from_scratch_reports_the_policys_own_plan(capsys) -> None:
    plan = _plan(capsys, "--policy-only", "--from-scratch")
    assert plan["feasible"] and plan["cost_per_hour"] == pytest.approx(3.6)
    notes = plan["notes"]
    assert notes[0].startswith("produced by: policy samples only")
    assert any("from scratch" in n for n in notes)
    assert not any("local search" in n and "lowered" in n for n in notes)
    assert not any("homogeneous" in n for n in notes)


def test_plan_full_pipeline_names_its_parts(capsys) -> None:
    plan = _plan(capsys)
    assert plan["notes"][0].startswith("produced by: policy samples")
    assert any("warm-started from the pretrained policy" in n for n in plan["notes"])
    assert any("iterated local search" in n for n in plan["notes"])


def test_plan_pretrained_policy_only_is_zero_shot(capsys) -> None:
    code = main(["plan", str(EXAMPLE), "--scheduler", "rl", "--json", "--pretrained",
                 "--policy-only"])
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["notes"][0].startswith("produced by: policy samples only")
    assert any("zero-shot" in n for n in plan["notes"])


def test_plan_rejects_pretrained_with_from_scratch(capsys) -> None:
    code = main(["plan", str(EXAMPLE), "--scheduler", "rl", "--pretrained", "--from-scratch"])
    assert code == 2
    assert "--from-scratch" in capsys.readouterr().err
