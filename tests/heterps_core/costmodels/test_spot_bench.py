"""bench/spot.py --quick end to end: real `heterps run` jobs of the tiny CTR-DNN killed at
random (and one drained by the runtime's spot notice, SIGTERM), resumed until done, and the
report comparing their cost per sample with market.py's expected figure."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from tests import benches

NUMBER = r"[\d,]+(?:\.\d+)?"


def load_bench() -> ModuleType:
    return benches.load_bench("spot")


@pytest.mark.slow
def test_the_spot_bench_preempts_resumes_and_reports_expected_against_measured(
    tmp_path: Path,
) -> None:
    out = tmp_path / "spot.md"
    assert load_bench().main(["--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert f"with `python bench/spot.py --quick --out {out}`" in text
    assert re.search(r"Load average at start [\d.]+ [\d.]+ [\d.]+, at end [\d.]+ ", text)
    assert re.search(r"\d+ CPUs; torch \S+", text)
    assert re.search(r"restart_s [\d.]+ s \(median of `--resume` runs", text)
    assert re.search(r"`pick` takes \*\*spot\*\*.* every \*\*[\d,]+ steps\*\*", text)
    rows = {
        m["name"]: m for m in re.finditer(
            rf"^\| (?P<name>chosen|x2|drain) \| (?P<every>[\d,]+) \| {NUMBER} \| (?P<jobs>\d+)\*? "
            rf"\| (?P<pre>\d+) \| (?P<drained>\d+) \| (?P<lost>[\d,]+) \| {NUMBER} \| {NUMBER} "
            rf"\| {NUMBER} \| (?P<samples>[\d,]+) \| {NUMBER} \| (?P<prior>{NUMBER}) "
            rf"\| (?P<exp>{NUMBER}) \| (?P<got>{NUMBER}) \| [+-][\d.]+% \|$", text, re.M)
    }
    assert set(rows) == {"chosen", "x2", "drain"}, text
    assert int(rows["x2"]["every"].replace(",", "")) == 2 * int(
        rows["chosen"]["every"].replace(",", ""))
    for name, least in (("chosen", 2), ("x2", 1), ("drain", 1)):
        row = rows[name]
        # Its preemptions, or it says it stopped at the launch cap (restarts slow for the rate).
        capped = f"- *{name}: stopped at --max-launches" in text
        assert int(row["pre"]) >= least or (capped and "*" in row.group(0)), text
        assert int(row["samples"].replace(",", "")) > 0
        for figure in ("prior", "exp", "got"):
            assert float(row[figure]) > 0, (name, figure, text)
    # Only the drain configuration sends notices (a notice that lands before the run can
    # drain, during its start-up, is a kill).
    assert rows["chosen"]["drained"] == rows["x2"]["drained"] == "0"
    assert sum(int(row["pre"]) for row in rows.values()) >= 1, text  # real kills happened
    assert int(rows["drain"]["drained"]) <= int(rows["drain"]["pre"])
    assert "Spot notices the runtime drains** (SIGTERM to the launcher)" in text
    assert "## Verdict" in text
    assert re.search(r"Expected vs measured at the planner's interval: (met|not met)", text)
