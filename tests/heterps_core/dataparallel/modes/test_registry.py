from __future__ import annotations

import json

import pytest

from heterps_core.dataparallel import DataParallelError, modes
from heterps_core.dataparallel.modes import SyncMode, SyncView


def test_every_mode_has_a_form_schema_whose_defaults_are_valid() -> None:
    for schema in modes.schemas():
        json.dumps(schema)  # the web form receives it as JSON
        properties = schema["params"]["properties"]
        defaults = {name: p["default"] for name, p in properties.items()}
        mode = modes.create(schema["name"], defaults)
        assert dict(mode.settings()) == defaults
        assert schema["summary"]


def test_ashl_schema_lists_its_knobs_with_bounds() -> None:
    props = modes.get("ashl").schema()["params"]["properties"]
    assert props["staleness"] == {
        "type": "integer", "default": 3, "minimum": 0, "maximum": 1000,
        "description": "SHL: rounds a worker may be ahead of the slowest",
    }
    assert props["error_feedback"]["type"] == "boolean"
    assert props["topk_ratio"]["type"] == "number"


def test_string_values_from_a_form_or_the_cli_are_coerced() -> None:
    mode = modes.create("ashl", {"staleness": "5", "topk_ratio": "0.1", "error_feedback": "no"})
    assert mode.settings()["staleness"] == 5
    assert mode.settings()["topk_ratio"] == 0.1
    assert mode.settings()["error_feedback"] is False


@pytest.mark.parametrize(
    ("name", "params", "field", "problem"),
    [
        ("ssp", {"staleness": -1}, "mode.ssp.staleness", "must be >= 0"),
        ("ssp", {"staleness": 2.5}, "mode.ssp.staleness", "must be an integer"),
        ("ssp", {"staleness": "x"}, "mode.ssp.staleness", "must be an integer"),
        ("ssp", {"stale": 1}, "mode.ssp.stale", "unknown parameter; known: staleness"),
        ("bsp", {"period": 1}, "mode.bsp.period", "known: none"),
        ("ashl", {"topk_ratio": 2}, "mode.ashl.topk_ratio", "must be <= 1.0"),
        ("ashl", {"error_feedback": "maybe"}, "mode.ashl.error_feedback", "true or false"),
        ("ashl", {"switch_loss": float("inf")}, "mode.ashl.switch_loss", "finite"),
        ("nope", {}, "mode", "unknown sync mode 'nope'; known: bsp, asp"),
    ],
)
def test_bad_parameters_name_the_field(
    name: str, params: dict, field: str, problem: str
) -> None:
    with pytest.raises(DataParallelError) as info:
        modes.create(name, params)
    assert info.value.field == field
    assert problem in str(info.value)


def test_registering_a_name_twice_is_refused() -> None:
    class Again(SyncMode):
        name = "bsp"
        summary = "duplicate"

    with pytest.raises(ValueError, match="registered twice"):
        modes.register(Again)


def test_proportional_local_steps() -> None:
    view = SyncView(0.0, 0, (0, 0, 0, 0), (0.01, 0.01, 0.02, 0.04))
    adsp = modes.create("adsp", {"commit_steps": 8})
    assert [adsp.plan_round(w, view).local_steps for w in range(4)] == [8, 8, 4, 2]
    local = modes.create("local_sgd", {"period": 5})
    assert {local.plan_round(w, view) for w in range(4)} == {
        modes.RoundPlan(local_steps=5, collective=True)
    }
