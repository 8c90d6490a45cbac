"""The `evaluate` kind: bad input named by field; plans priced by the spec's cost model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from heterps_core.progress import Progress
from webapp.background import kinds
from webapp.background.context import WorkContext

TINY = json.loads(
    (Path(__file__).resolve().parents[3] / "webapp/catalogue/demo/tiny-ctr.json").read_text()
)


def _errors(params: Any) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as err:
        kinds.get("evaluate").clean_params(params)
    return err.value.message_dict


def test_bad_params_name_the_field() -> None:
    assert "params" in _errors([])
    assert _errors({"instance": TINY | {"batch_size": -1}}) == {
        "instance.batch_size": ["must be greater than 0, got -1"]}
    assert "instance.version" in _errors({"instance": {k: v for k, v in TINY.items()
                                                         if k != "version"}})
    assert _errors({"instance": TINY, "assignments": [["cpu", "tpu", "gpu"]]}) == {
        "assignments[0]": ["names no resource: tpu"]}
    assert _errors({"instance": TINY, "assignments": [["cpu"]]}) == {
        "assignments[0]": ["has 1 entries, the instance has 3 layers"]}


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(ValidationError) as err:
        kinds.get("teleport")
    assert "evaluate" in err.value.message_dict["kind"][0]


def test_default_assignments_are_every_single_resource_plan() -> None:
    params = kinds.get("evaluate").clean_params({"instance": TINY})
    assert params["assignments"] == [["cpu"] * 3, ["gpu"] * 3]


def test_run_prices_the_spec_example_and_reports_each_step() -> None:
    kind = kinds.get("evaluate")
    params = kind.clean_params(
        {"instance": TINY, "assignments": [["cpu"] * 3, ["cpu", "gpu", "gpu"], ["gpu"] * 3]}
    )
    seen: list[Progress] = []
    ctx = WorkContext(work_id=0, project_id=0, user_id=None, params=params, report=seen.append)
    result = kind.run(ctx)
    # The spec's worked example (§7): 4.2, 3.6 and 12.0 $/h; the mixed plan is the optimum.
    assert [p["cost_per_hour"] for p in result["plans"]] == pytest.approx([4.2, 3.6, 12.0])
    assert result["best"] == 1
    assert [(p.current, p.total) for p in seen] == [(1, 3), (2, 3), (3, 3)]
    assert seen[1].message == "priced cpu,gpu,gpu"
    assert seen[1].metrics["cost_per_hour"] == pytest.approx(3.6)
