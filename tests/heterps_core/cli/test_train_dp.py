from __future__ import annotations

import json
from pathlib import Path

import pytest

from heterps_core.cli import main


def test_train_dp_trains_and_prints_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    code = main(["train-dp", "ctr_dnn", "--mode", "ssp", "--param", "staleness=1",
                 "--slowdowns", "1,1,3", "--steps", "120", "--events", str(events), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "ssp" and result["mode_params"] == {"staleness": 1}
    assert result["global_steps"] == 120 and result["stopped"] == "max_steps"
    assert max(w["max_staleness"] for w in result["workers"]) <= 1
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert lines[0]["event"] == "profile"
    assert sum(line["event"] == "step" for line in lines) == 120


def test_train_dp_prints_a_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train-dp", "ctr_dnn", "--mode", "bsp", "--steps", "30"]) == 0
    out = capsys.readouterr().out
    assert "held-out loss" in out and "slowdown" in out and "final held-out loss" in out


def test_list_modes_prints_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train-dp", "--list-modes"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)]
    assert names == ["bsp", "asp", "ssp", "local_sgd", "adsp", "ashl"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "ssp", "--param", "staleness=-2"], "mode.ssp.staleness: must be >= 0"),
        (["--param", "noequals"], "--param: expected NAME=VALUE"),
        (["--slowdowns", "1,x,2"], "--slowdowns: expected numbers"),
        (["--workers", "2", "--slowdowns", "1,2,4"], "slowdowns: needs one factor per worker"),
        (["--size", "enormous"], "'enormous'"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["train-dp", "ctr_dnn", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_model_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train-dp"]) == 2
    assert "model: required" in capsys.readouterr().err
