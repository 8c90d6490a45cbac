"""The cost model interface: one model per instance, chosen by its version; what a solver
asks of it agrees with `evaluate`; the package sits below the schedulers (issue 22)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from heterps_core.costmodel import evaluate
from heterps_core.costmodels import CostModel, StageCost, cost_model_for, cost_model_of
from heterps_core.costmodels.v1 import StagewiseModel
from heterps_core.costmodels.v2.model import JointModel
from heterps_core.instance import Instance
from heterps_core.schedulers.exact import exact_plan

DATA = Path(__file__).resolve().parents[1] / "schedulers" / "data"
PACKAGE = Path(__file__).resolve().parents[3] / "heterps_core" / "costmodels"


def _load(name: str) -> Instance:
    return Instance.load(DATA / name)


def test_the_model_is_chosen_by_the_instances_version() -> None:
    tiny = _load("tiny.json")
    assert isinstance(cost_model_for(tiny), StagewiseModel)
    assert isinstance(cost_model_for(_load("tiny_v2.json")), JointModel)
    assert isinstance(cost_model_for(tiny.as_v2("bsp", 2)), JointModel)
    assert cost_model_for(tiny).stagewise and not cost_model_for(tiny.as_v2()).stagewise


@pytest.mark.parametrize("name", ["tiny.json", "caps.json", "tiny_v2.json"])
def test_the_model_prices_a_plans_own_units_as_evaluate_did(name: str) -> None:
    inst = _load(name)
    plan = exact_plan(inst)
    assert plan.feasible and plan.assignment is not None
    model: CostModel = cost_model_of(inst, plan)
    runs = [(s.first, s.last, s.resource, s.units or 0) for s in plan.stages]
    priced = model.price(runs, plan.parameter_server, "exact")
    assert priced.to_dict() == plan.to_dict()
    assert model.evaluate(list(plan.assignment), "exact").to_dict() == plan.to_dict()


def test_a_v1_stage_and_its_one_option_are_evaluates() -> None:
    inst = _load("tiny.json")
    model = cost_model_for(inst)
    plan = evaluate(inst, ["cpu", "gpu", "gpu"])
    for stage in plan.stages:
        found = model.stage(stage.first, stage.last, stage.resource)
        assert isinstance(found, StageCost)
        assert (found.units, found.throughput) == (stage.units, stage.throughput)
        option = model.options(stage.first, stage.last, stage.resource)
        assert not isinstance(option, str)
        assert option.units.tolist() == [stage.units]
        assert float(option.time_s[0]) == stage.time_per_batch_s


def test_the_cost_model_package_never_imports_the_schedulers() -> None:
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    a.name for a in node.names]
                assert not any(n.startswith("heterps_core.schedulers") for n in names), path
