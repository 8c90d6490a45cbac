"""`plan` / `evaluate`: each used type's figure tier, and the chosen plan against the best
homogeneous plan (issue 21 items 6 and 8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core import schedulers
from heterps_core.cli import main
from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND

DATA = Path(__file__).parent.parent / "schedulers" / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def with_tiers(tmp_path: Path, name: str = "tiny.json") -> Path:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    data["resources"][0]["provenance"] = {"tier": "measured-here", "device": "cpu (2 threads)"}
    data["resources"][1]["provenance"] = {"tier": "estimated", "device": "roofline for gpu",
                                          "band": ESTIMATE_ERROR_BAND}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_plan_json_carries_each_used_types_tier_and_the_ratio(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = with_tiers(tmp_path)
    code, out, _ = run(capsys, "plan", str(path), "--json")
    assert code == 0
    plan = json.loads(out)
    used = list(dict.fromkeys(plan["assignment"]))
    assert list(plan["provenance"]) == used
    assert plan["provenance"]["cpu"]["tier"] == "measured-here"
    assert plan["provenance"]["cpu"]["measured"] is True
    assert plan["provenance"]["gpu"]["tier"] == "estimated"
    assert plan["provenance"]["gpu"]["band"] == ESTIMATE_ERROR_BAND
    # the ratio against the homogeneous scheduler's plan (the same model, v1: no server)
    from heterps_core.instance import Instance

    homogeneous = schedulers.create("homogeneous").plan(Instance.load(path))
    ratio = plan["heterogeneity"]["ratio"]
    assert ratio == pytest.approx(homogeneous.cost_per_hour / plan["cost_per_hour"], rel=1e-6)
    assert plan["heterogeneity"]["heterogeneous"] is (len(used) > 1)


def test_plan_text_shows_the_tiers_and_the_verdict(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "plan", str(with_tiers(tmp_path)))
    assert code == 0
    assert "figures of cpu: measured on this host (cpu (2 threads))" in out
    assert f"figures of gpu: estimated ±{100 * ESTIMATE_ERROR_BAND:.0f}%" in out
    assert "heterogeneity pays" in out and "the best single-type plan (all on" in out


def test_an_old_instance_says_not_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", str(DATA / "tiny.json"), "--assignment",
                       "cpu,gpu,gpu", "--json")
    assert code == 0
    plan = json.loads(out)
    assert {r["tier"] for r in plan["provenance"].values()} == {"unknown"}
    assert not any(r["measured"] for r in plan["provenance"].values())


def test_plan_all_json_and_the_server_in_the_mix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DATA / "tiny_v2.json"), "--scheduler", "all",
                       "--json")
    assert code == 0
    data = json.loads(out)
    chosen = next(p for p in data["plans"] if p["scheduler"] == data["chosen"])
    mix = data["heterogeneity"]["mix"]
    assert mix[-1] == chosen["parameter_server"]["resource"]
    assert data["heterogeneity"]["heterogeneous"] is (len(set(mix)) > 1)
    assert all("provenance" in p for p in data["plans"])


def test_a_bad_tier_is_exit_2_naming_the_field(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = json.loads((DATA / "tiny.json").read_text())
    data["resources"][1]["provenance"] = {"tier": "guessed"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "plan", str(path), "--json")
    assert code == 2
    assert "resources[1].provenance.tier" in err and "Traceback" not in err


def test_profile_reports_and_writes_each_types_tier(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from heterps_core.hardware import default_catalogue

    names = default_catalogue().names
    out = tmp_path / "ctr.json"
    code, _, err = run(capsys, "profile", "ctr_dnn", "--size", "tiny", "--batch-size", "64",
                       "--threads", "1", "--clock", "cpu", "--warmup", "0", "--repeats", "1",
                       "--target", "1000", "--device-kind", names[0], "--out", str(out))
    assert code == 0, err
    assert f"  {names[0]}: measured on this host (cpu (1 threads" in err
    for name in names[1:]:
        assert f"  {name}: estimated ±{100 * ESTIMATE_ERROR_BAND:.0f}% (roofline for {name})" \
            in err
    written = json.loads(out.read_text())
    tiers = {r["name"]: r["provenance"]["tier"] for r in written["resources"]}
    assert tiers == {name: "measured-here" if name == names[0] else "estimated"
                     for name in names}
