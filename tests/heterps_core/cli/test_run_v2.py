"""`heterps run` with a cost model v2 plan: it runs as priced, or is told to re-evaluate."""

from __future__ import annotations

from pathlib import Path

import pytest

from heterps_core.cli import main
from heterps_core.costmodel import evaluate
from heterps_core.instance import Instance
from heterps_core.runtime.binding import Target
from heterps_core.runtime.spec import StageSpec, layout

DATA = Path(__file__).resolve().parents[1] / "schedulers" / "data"


def v2_plan(folder: Path) -> Path:
    instance = Instance.load(DATA / "tiny_v2.json").replace(sync="async", micro_batches=2)
    path = folder / "plan.json"
    path.write_text(evaluate(instance, ["cpu", "gpu", "gpu"]).to_json())
    return path


@pytest.mark.parametrize(("extra", "flag", "priced"), [
    (["--sync", "bsp"], "--sync", "async"),
    (["--micro-batches", "4"], "--micro-batches", "2"),
    (["--ps-shards", "3"], "--ps-shards", "1"),
])
def test_override_the_plan_was_not_priced_for_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], flag: str, priced: str
) -> None:
    code = main(["run", str(v2_plan(tmp_path)), "--model", "ctr_dnn", "--size", "tiny",
                 "--steps", "4", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{flag}: the plan was priced for {priced}" in err and "--reevaluate" in err
    assert "Traceback" not in err


def test_reevaluate_names_an_infeasible_reprice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A target the bsp turns cannot reach with the plan's assignment within the counts
    instance = Instance.load(DATA / "tiny_v2.json")
    data = instance.to_dict()
    data["throughput_target"] = 2_000_000
    for res in data["resources"]:
        res["count"] = 1
    bad = tmp_path / "inst.json"
    Instance.from_dict(data).save(bad)
    code = main(["run", str(v2_plan(tmp_path)), "--model", "ctr_dnn", "--size", "tiny",
                 "--steps", "4", "--sync", "bsp", "--reevaluate", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "--reevaluate: re-priced, the plan is infeasible" in err


def test_server_shards_run_on_the_plan_resource_target() -> None:
    stages = (StageSpec(0, 0, "local-1", 1), StageSpec(1, 2, "local-2", 1))
    binding = {"local-1": Target("cpu"), "local-2": Target("cpu")}
    ranks = layout(stages, binding, 2, "cpu:1")
    assert [r.target for r in ranks if r.role == "ps"] == ["cpu:1", "cpu:1"]
