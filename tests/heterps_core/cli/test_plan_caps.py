"""`heterps plan --max-hourly-cost X --max-total-cost Y`: the cheapest plan within the caps,
or a diagnostic naming the cap; bad values are refused naming the option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core.cli import main
from heterps_core.generate import random_instance

TINY = str(Path(__file__).parents[1] / "schedulers" / "data" / "tiny.json")


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["plan", *argv, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_a_cap_above_the_optimum_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    free = plan(capsys, TINY)
    capped = plan(capsys, TINY, "--max-hourly-cost", "3.6", "--max-total-cost", "100")
    assert capped["assignment"] == free["assignment"]
    assert capped["cost_per_hour"] == free["cost_per_hour"] == pytest.approx(3.6)


def test_an_hourly_cap_below_the_optimum_says_what_the_target_needs(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = plan(capsys, TINY, "--max-hourly-cost", "3")
    assert not data["feasible"]
    assert data["reason"] == ("no plan: the target needs at least $3.600/h "
                              "(the hourly cap is $3.000/h)")


def test_a_total_cap_below_every_plan_names_the_cap(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan(capsys, TINY, "--max-total-cost", "5")
    assert not data["feasible"]
    assert data["reason"].startswith("no plan:")
    assert "the total cap of $5.00" in data["reason"]


def test_a_binding_total_cap_takes_a_dearer_faster_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found among generated instances: the optimum's total breaks the cap, a plan costing
    more per hour but finishing sooner does not."""
    for seed in range(60):
        inst = random_instance(seed, 4, 3)
        path = tmp_path / f"{seed}.json"
        inst.save(path)
        free = plan(capsys, str(path))
        if not free["feasible"]:
            continue
        cap = free["total_cost"] * 0.97
        capped = plan(capsys, str(path), "--max-total-cost", f"{cap:.6f}")
        if capped["feasible"]:
            assert capped["total_cost"] <= cap * (1 + 1e-9)
            assert capped["cost_per_hour"] > free["cost_per_hour"]
            assert capped["throughput"] > free["throughput"]
            return
    pytest.fail("no generated instance had a faster plan within 97% of the optimum's total")


@pytest.mark.parametrize(("argv", "words"), [
    (["--max-hourly-cost", "0"], "--max-hourly-cost: must be greater than 0"),
    (["--max-total-cost", "nan"], "--max-total-cost: must be finite"),
    (["--max-total-cost", "lots"], "--max-total-cost: must be a number"),
])
def test_bad_caps_are_refused_naming_the_option(
        argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", TINY, *argv])
    assert info.value.code == 2
    assert words in capsys.readouterr().err


def test_a_total_cap_needs_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(Path(TINY).read_text())
    del data["samples"]
    path = tmp_path / "no-samples.json"
    path.write_text(json.dumps(data))
    assert main(["plan", str(path), "--max-total-cost", "5"]) == 2
    assert "--max-total-cost: needs the instance's `samples`" in capsys.readouterr().err


def test_heuristics_are_checked_against_the_caps(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan(capsys, TINY, "--scheduler", "greedy", "--max-hourly-cost", "1")
    assert not data["feasible"]
    assert data["reason"].startswith("no plan:") and "the hourly cap of $1.000/h" in data["reason"]
