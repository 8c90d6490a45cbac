"""`heterps plan / evaluate / pareto / what-if`: JSON per spec §6, tables, exit 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heterps_core.cli import main

DATA = Path(__file__).parent.parent / "schedulers" / "data"
EXPECTED = json.loads((DATA / "expected.json").read_text())
REPO = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["tiny.json", "caps.json"])
def test_plan_json_is_the_expected_optimum(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, _ = run(capsys, "plan", str(DATA / name), "--scheduler", "exact", "--json")
    assert code == 0
    plan = json.loads(out)
    want = EXPECTED[name]
    assert plan["assignment"] == want["assignment"]
    assert plan["cost_per_hour"] == pytest.approx(want["cost_per_hour"], rel=1e-9)
    assert plan["throughput"] == pytest.approx(want["throughput"], rel=1e-9)
    assert set(plan) >= {"scheduler", "feasible", "stages", "hours", "total_cost",
                         "solve_time_s", "reason"}


def test_plan_infeasible_exits_zero_with_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DATA / "infeasible.json"), "--json")
    assert code == 0
    plan = json.loads(out)
    assert plan["feasible"] is False and "fc1" in plan["reason"]


def test_plan_table_and_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DATA / "tiny.json"), "--explain")
    assert code == 0
    assert "cost $3.600 per hour" in out
    assert "Binding: stage 1 (embedding on cpu" in out
    assert "all on cpu" in out and "$0.600/h more (+16.7%)" in out


def test_seeded_scheduler_via_cli_is_repeatable(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("plan", str(DATA / "caps.json"), "--scheduler", "genetic", "--seed", "4", "--json")
    first = json.loads(run(capsys, *args)[1])
    second = json.loads(run(capsys, *args)[1])
    assert first["assignment"] == second["assignment"]


def test_evaluate_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", str(DATA / "tiny.json"),
                       "--assignment", "cpu,gpu,gpu", "--json")
    assert code == 0
    assert json.loads(out)["cost_per_hour"] == pytest.approx(3.6)


def test_pareto_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pareto", str(DATA / "tiny.json"), "--points", "5", "--json")
    assert code == 0
    points = json.loads(out)["points"]
    assert len(points) == 5
    assert all({"target", "cost_per_hour", "cost_per_million_samples"} <= set(p) for p in points)
    code, out, _ = run(capsys, "pareto", str(DATA / "tiny.json"), "--targets", "50000")
    assert code == 0 and "cpu x1 | gpu x1" in out


def test_what_if(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "what-if", str(DATA / "tiny.json"), "--resource", "gpu",
                       "--price", "1", "--json")
    assert code == 0
    assert json.loads(out)["delta_cost_per_hour"] == pytest.approx(-2.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "MISSING"], "cannot read file"),
        (["plan", "TINY", "--scheduler", "nope"], "unknown scheduler 'nope'"),
        (["plan", "TINY", "--budget-s", "-1"], "--budget-s: must be greater than 0"),
        (["plan", "BAD"], "resources[0].count: must be greater than 0"),
        (["evaluate", "TINY", "--assignment", "cpu,tpu,gpu"], "assignment[1]"),
        (["evaluate", "TINY", "--assignment", "cpu"], "has 1 entries"),
        (["pareto", "TINY", "--targets", "1,x"], "--targets[1]: not a number"),
        (["pareto", "TINY", "--points", "0"], "points: must be at least 1"),
        (["what-if", "TINY", "--resource", "tpu", "--count", "2"], "no resource named 'tpu'"),
        (["plan", "TINY", "--scheduler", "brute"], None),  # small enough: runs
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str | None
) -> None:
    bad = json.loads((DATA / "tiny.json").read_text())
    bad["resources"][0]["count"] = 0
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    paths = {"TINY": str(DATA / "tiny.json"), "MISSING": str(tmp_path / "none.json"),
             "BAD": str(tmp_path / "bad.json")}
    code, _, err = run(capsys, *[paths.get(a, a) for a in argv])
    if message is None:
        assert code == 0
        return
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_brute_refusal_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from heterps_core.generate import random_instance

    random_instance(1, 16, 3).save(tmp_path / "big.json")
    code, _, err = run(capsys, "plan", str(tmp_path / "big.json"), "--scheduler", "brute")
    assert code == 2 and "limit is 2,000,000" in err


@pytest.mark.slow
def test_plan_all_prints_considered_table() -> None:
    # Through `python -m heterps_core`, as a user runs it (the rl scheduler makes this slow).
    proc = subprocess.run(
        [sys.executable, "-m", "heterps_core", "plan", str(DATA / "caps.json"),
         "--scheduler", "all", "--budget-s", "1", "--seed", "1"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Considered plans for caps-bind")
    chosen = [line for line in lines if line.startswith("✔")]
    assert len(chosen) == 1 and "19.376" in chosen[0]
    for name in ("exact", "greedy", "genetic", "bayes", "random", "brute", "homogeneous",
                 "heuristic"):
        assert any(line[2:].startswith(name) for line in lines), name


@pytest.mark.slow
def test_plan_all_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DATA / "tiny.json"), "--scheduler", "all",
                       "--budget-s", "1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["chosen"] == "exact"
    assert {p["scheduler"] for p in data["plans"]} >= {"exact", "brute", "greedy"}


def test_sync_flags_price_the_plan_and_are_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    tiny = str(DATA / "tiny.json")
    _, v1, _ = run(capsys, "plan", tiny, "--json")
    assert "sync" not in json.loads(v1)  # a v1 file without flags keeps the v1 plan format
    plans = {}
    for sync in ("async", "bsp"):
        code, out, _ = run(capsys, "plan", tiny, "--sync", sync, "--micro-batches", "2", "--json")
        assert code == 0
        plans[sync] = json.loads(out)
        assert plans[sync]["sync"] == sync and plans[sync]["micro_batches"] == 2
        assert plans[sync]["cost_model"] == 2
    # bsp: the stages take turns, so the same plan sustains less than async
    assert plans["bsp"]["throughput"] < plans["async"]["throughput"]
    code, out, _ = run(capsys, "plan", tiny, "--sync", "auto", "--json")
    auto = json.loads(out)
    assert auto["sync"] in ("async", "bsp") and any("sync auto" in n for n in auto["notes"])
    code, out, _ = run(
        capsys, "evaluate", tiny, "--assignment", "cpu,gpu,gpu", "--sync", "bsp", "--json"
    )
    bsp = json.loads(out)
    stage_rates = [s["throughput"] for s in bsp["stages"]]
    assert bsp["throughput"] == pytest.approx(1 / sum(1 / r for r in stage_rates), rel=1e-6)
    code, out, _ = run(capsys, "pareto", tiny, "--sync", "bsp", "--points", "3", "--json")
    assert all(p["sync"] == "bsp" for p in json.loads(out)["points"])


def test_bad_micro_batches_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", str(DATA / "tiny.json"), "--micro-batches", "0")
    assert code == 2 and "--micro-batches" in err


def test_rl_trains_for_the_updates_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    # --updates is the RL scheduler's work budget; the plan's notes say how many ran
    code, out, _ = run(capsys, "plan", str(DATA / "tiny.json"), "--scheduler", "rl",
                       "--updates", "5", "--json")
    assert code == 0
    notes = json.loads(out)["notes"]
    assert any("5 of 5 updates" in note and "CPU-s" in note for note in notes), notes


def test_bad_updates_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["plan", str(DATA / "tiny.json"), "--scheduler", "rl", "--updates", "0"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--updates: must be greater than 0" in err and "Traceback" not in err
