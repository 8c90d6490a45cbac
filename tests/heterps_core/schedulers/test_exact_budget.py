"""`exact` on large unit counts (issue 18): pruning keeps it exact, a budget labels the gap,
the integer programme agrees, progress reaches the CLI and the web's callback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import heterps_core.schedulers.exact as exact_module
from heterps_core.cli import main
from heterps_core.costmodel import evaluate
from heterps_core.generate import stress_instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress
from heterps_core.schedulers import create
from heterps_core.schedulers.exact import exact_plan
from heterps_core.schedulers.exact_bounds import cap_bounds
from heterps_core.schedulers.stagetable import StageTable

GAP = re.compile(r"not proven optimal, gap (\d+\.\d+)%.*less than \$([\d,.]+)/h")


def same_optimum(a: Plan, b: Plan) -> bool:
    """Same feasibility, cost and throughput (relative 1e-9), as the objective compares."""
    return a.feasible == b.feasible and (not a.feasible or (
        a.cost_per_hour == pytest.approx(b.cost_per_hour, rel=1e-9)
        and a.throughput == pytest.approx(b.throughput, rel=1e-9)))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_layers=st.integers(2, 8), n_res=st.integers(2, 3))
def test_stress_instances_equal_brute(seed: int, n_layers: int, n_res: int) -> None:
    # Caps binding on tens of units: the pruned capacity DP must stay exact.
    inst = stress_instance(seed, n_layers, n_res)
    assert same_optimum(create("exact").plan(inst), create("brute").plan(inst))


def test_stress_instance_has_binding_caps_on_large_counts() -> None:
    inst = stress_instance(0, 64, 8)
    plan = exact_plan(inst)
    assert plan.feasible and not plan.notes
    relaxed = exact_plan(inst.replace(resources=tuple(
        r.__class__(r.name, r.kind, r.price_per_hour, 10**6, r.memory_gb, r.network_gbps)
        for r in inst.resources)))
    assert relaxed.cost_per_hour is not None and plan.cost_per_hour is not None
    assert relaxed.cost_per_hour < plan.cost_per_hour  # the caps change the optimum
    assert max(s.units or 0 for s in plan.stages) >= 20  # on large unit counts
    assert len(stress_instance(0, 16, 16).resources) == 16


@pytest.mark.parametrize("seed", range(4))
def test_integer_programme_agrees_on_stress(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    inst = stress_instance(seed, 24, 4)
    dp = exact_plan(inst)
    monkeypatch.setattr(exact_module, "MAX_DP_WORK", -1)
    assert same_optimum(exact_plan(inst), dp)


def test_bounds_bracket_the_optimum_and_keep_its_stages() -> None:
    inst = stress_instance(0, 64, 8)
    table = StageTable(inst)
    bounds = cap_bounds(table)
    optimum = exact_plan(inst)
    assert optimum.cost_per_hour is not None
    assert bounds.lower <= optimum.cost_per_hour * (1 + 1e-9) <= bounds.upper * (1 + 2e-9)
    keep = bounds.keep
    for stage in optimum.stages:
        assert keep[table.resources.index(stage.resource), stage.last, stage.first]
    assert keep.sum() < (table.units_by_last > 0).sum() / 2  # most stages are pruned


def test_budget_returns_best_plan_with_certified_gap() -> None:
    inst = stress_instance(0, 64, 8)
    optimum = exact_plan(inst)
    assert optimum.cost_per_hour is not None and not optimum.notes
    rushed = exact_plan(inst, budget_s=1e-9)
    assert rushed.feasible and rushed.cost_per_hour is not None
    assert len(rushed.notes) == 1
    match = GAP.search(rushed.notes[0])
    assert match, rushed.notes
    lower = float(match.group(2).replace(",", ""))
    # The label is honest: the plan is no better than the optimum, the bound no higher.
    assert rushed.cost_per_hour >= optimum.cost_per_hour * (1 - 1e-9)
    assert lower <= optimum.cost_per_hour * (1 + 1e-3)
    gap = float(match.group(1)) / 100
    assert gap == pytest.approx(rushed.cost_per_hour / lower - 1, abs=1e-3)
    # the plan is what the cost model says
    again = evaluate(inst, list(rushed.assignment or ()))
    assert again.cost_per_hour == rushed.cost_per_hour


def test_integer_programme_is_optimal_or_labelled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_module, "MAX_DP_WORK", -1)
    inst = stress_instance(0, 64, 8)
    optimum = exact_plan(inst)
    assert optimum.cost_per_hour is not None
    plan = exact_plan(inst, budget_s=0.05)
    assert plan.feasible and plan.cost_per_hour is not None
    # HiGHS gets at least 0.1 s, and on a fast machine proves this instance in that time:
    # then the plan must be the optimum; otherwise it must say how far from it it may be.
    if not plan.notes:
        assert plan.cost_per_hour == pytest.approx(optimum.cost_per_hour, rel=1e-9)
    else:
        assert "not proven optimal" in plan.notes[0] or "is optimal, but" in plan.notes[0]
        assert plan.cost_per_hour >= optimum.cost_per_hour * (1 - 1e-9)


def test_scheduler_has_a_default_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_module, "DEFAULT_BUDGET_S", 1e-9)
    plan = create("exact").plan(stress_instance(0, 64, 8))
    assert plan.notes and "1e-09 CPU-s budget was reached" in plan.notes[0]
    # an explicit budget wins, inf means none
    assert not create("exact", budget_s=float("inf")).plan(stress_instance(0, 64, 8)).notes


def test_progress_carries_bounds_for_the_web() -> None:
    seen: list[Progress] = []
    create("exact").plan(stress_instance(0, 64, 8), seen.append)
    assert seen[-1].message == "optimal" and seen[-1].fraction == 1
    bounded = [p for p in seen if "lower_bound_per_hour" in p.metrics]
    assert bounded and all("gap" in p.metrics for p in bounded)
    assert any("states" in p.message for p in bounded)  # the capacity DP's own steps
    gaps = [p.metrics["gap"] for p in bounded]
    assert gaps == sorted(gaps, reverse=True)  # the gap only closes


def test_cli_prints_progress_and_gap(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "stress.json"
    stress_instance(0, 64, 8).save(path)
    code = main(["plan", str(path), "--progress", "--budget-s", "1e-9"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "note: not proven optimal, gap" in out
    assert "availability caps bind" in err and err.strip().startswith("[")
    code = main(["plan", str(path), "--json", "--budget-s", "inf"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""  # no progress unless asked for (stderr is not a terminal)
    plan = json.loads(out)
    assert plan["feasible"] and "notes" not in plan


def test_progress_only_moves_forward() -> None:
    seen: list[Progress] = []
    create("exact").plan(stress_instance(2, 64, 8), seen.append)
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(set(fractions)) > 3  # it does move in between
