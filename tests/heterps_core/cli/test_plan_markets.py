"""`heterps plan` / `evaluate` on an instance with a spot market say each stage's market;
without markets the output has no such lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heterps_core.cli import main

TINY = Path(__file__).parents[1] / "schedulers" / "data" / "tiny.json"


def spot_instance(tmp_path: Path) -> str:
    data = json.loads(TINY.read_text())
    data["resources"][1]["market"] = {"spot_price": 0.9, "interruptions_per_hour": 0.5,
                                      "restart_s": 120}
    path = tmp_path / "spot.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_plan_text_names_each_stage_market(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", spot_instance(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "stage 1: on-demand" in out
    assert "stage 2: spot, checkpoint every 14,294 steps" in out
    assert "expected spot interruptions over the job: 1.6" in out


def test_evaluate_json_has_the_markets(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", spot_instance(tmp_path), "--assignment", "cpu,gpu,gpu",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["market"] for s in data["stages"]] == ["on-demand", "spot"]
    assert data["expected_interruptions"] == pytest.approx(1.62, abs=0.01)


def test_without_markets_nothing_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(TINY)]) == 0
    out = capsys.readouterr().out
    assert "spot" not in out and "on-demand" not in out
