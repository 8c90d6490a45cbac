"""The pieces of the v2 exact search (heterps_core/schedulers/exact_v2.py): the vector option
table equals the scalar `stage_options`, the Lagrangian tables are the same by layer and by
stage, the bounds bracket the optimum, pruning changes no optimum, and a time budget gives
a labelled, honest plan (issue 15)."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest

from heterps_core.costmodel import costs_equal
from heterps_core.costmodels.v2.labels import LabelDP
from heterps_core.costmodels.v2.relax import Multipliers, Relaxation
from heterps_core.costmodels.v2.server import server_choices
from heterps_core.costmodels.v2.table import option_table
from heterps_core.costmodels.v2.terms import StageTerms, stage_options
from heterps_core.generate import random_instance, with_parameter_server
from heterps_core.instance import Instance
from heterps_core.progress import Progress
from heterps_core.schedulers import create
from heterps_core.schedulers.exact import exact_plan
from heterps_core.schedulers.exact_v2 import ChoiceSearch, exact_v2
from tests.heterps_core.schedulers.test_exact_v2 import _raw

GAP = re.compile(r"gap (\d+\.\d+)%.*costs \$([\d,.]+)/h.*less than \$([\d,.]+)/h")


def generated(seed: int, n: int, caps: bool = False, n_res: int = 4) -> Instance:
    sync = "async" if seed % 2 else "bsp"
    inst = random_instance(seed, n, n_res, caps=caps).as_v2(sync, [1, 2, 4][seed % 3])
    return with_parameter_server(inst) if seed % 4 < 2 else inst


@pytest.mark.parametrize("seed", range(8))
def test_option_table_equals_stage_options(seed: int) -> None:
    inst = generated(seed, 12) if seed % 2 else Instance.from_dict(_raw(seed))
    # with a server, its first placement: the row wait then includes the shards' work
    choices, _ = server_choices(inst)
    server = choices[0].server if choices else None
    terms = StageTerms(inst, server=server)
    table = option_table(terms)
    names = inst.resource_names
    by_stage = {(o.first, o.last, o.resource): o
                for opts in table.candidates(names).values() for o in opts}
    compared = 0
    for last in range(len(inst.layers)):
        for first in range(last + 1):
            for res in names:
                scalar = stage_options(terms, first, last, res)
                vector = by_stage.get((first, last, res))
                if isinstance(scalar, str):
                    assert vector is None, (first, last, res, scalar)
                    continue
                assert vector is not None, (first, last, res)
                assert vector.ahead == scalar.ahead
                # the same arithmetic in the same order: equal to the last bit
                assert np.array_equal(vector.units, scalar.units)
                assert np.array_equal(vector.cost, scalar.cost)
                assert np.array_equal(vector.time_s, scalar.time_s)
                assert np.array_equal(vector.per_sample, scalar.per_sample)
                compared += 1
    assert compared == len(by_stage) and compared > 0


@pytest.mark.parametrize("seed", range(4))
def test_lagrangian_tables_by_stage_equal_tables_by_layer(seed: int) -> None:
    inst = generated(seed, 10)
    table = option_table(StageTerms(inst))
    relax = Relaxation(table, 10, 4, inst.micro_batches, 1 / inst.throughput_target,
                       np.array([r.count for r in inst.resources]))
    rng = np.random.default_rng(seed)
    mult = Multipliers(rng.uniform(0, 5e5, 3), rng.uniform(0, 2, (3, 4)))
    weights = np.minimum.reduceat(relax.priced(mult), table.starts, axis=1)
    by_layer = relax.tables(mult)  # 10 layers, many stages: the per-layer loop
    assert table.starts.size > 4 * 10
    by_stage = relax._sparse_tables(mult, weights, by_layer.dense)
    for name in ("head", "tail", "ends", "value"):
        np.testing.assert_allclose(getattr(by_stage, name), getattr(by_layer, name),
                                   rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_bounds_bracket_the_optimum(seed: int) -> None:
    inst = generated(seed, 10, caps=seed % 2 == 1)
    best = exact_plan(inst)
    assert best.feasible
    choices, _ = server_choices(inst)
    for choice in choices:
        full = option_table(StageTerms(inst, server=choice.server))
        search = ChoiceSearch(inst, choice, full.within(choice.counts, inst.resource_names))
        search.bound(None)
        server = choice.server.cost_per_hour if choice.server else 0.0
        assert search.lower + server <= best.cost_per_hour * (1 + 1e-9) + 1e-9
        if search.best.solution is not None:
            assert search.best.cost + server >= best.cost_per_hour * (1 - 1e-9)


def unpruned(inst: Instance) -> tuple[float, float] | None:
    """The label DP over every option with no bounds at all (caps added round by round)."""
    out = None
    choices, _ = server_choices(inst)
    for choice in choices:
        table = option_table(StageTerms(inst, choice.counts, choice.server))
        candidates = table.candidates(inst.resource_names)
        rate = choice.server.throughput if choice.server else math.inf
        capped: list[str] = []
        while True:
            sol = LabelDP(inst, candidates, capped, choice.counts, rate).solve()
            if sol is None:
                break
            used: dict[str, int] = {}
            for _, _, res, units in sol.runs:
                used[res] = used.get(res, 0) + units
            over = {r for r, u in used.items() if u > choice.counts[r]}
            if not over:
                cost = sol.cost + (choice.server.cost_per_hour if choice.server else 0.0)
                if out is None or (cost < out[0] if not costs_equal(cost, out[0])
                                   else sol.throughput > out[1] * (1 + 1e-9)):
                    out = (cost, sol.throughput)
                break
            capped = sorted(set(capped) | over)
    return out


@pytest.mark.parametrize("seed", range(0, 24, 2))  # even seeds: bsp (odd: async, slow)
def test_pruned_search_equals_unpruned_label_dp(seed: int) -> None:
    # Larger unit counts than brute force reaches (tens of units per stage): the bounds and
    # the trimming must not change the optimum. (One micro-batch and no caps keep the
    # unpruned reference to two label fields; with more it takes minutes.) Sparse traffic and
    # the server come with half of them.
    inst = generated(seed, 4, n_res=3).replace(micro_batches=1)
    plan = exact_plan(inst)
    truth = unpruned(inst)
    if truth is None:
        assert not plan.feasible
        return
    assert plan.feasible and plan.cost_per_hour is not None
    assert costs_equal(plan.cost_per_hour, truth[0]), (plan.cost_per_hour, truth)
    assert plan.throughput == pytest.approx(truth[1], rel=1e-7)


def hard_instance() -> Instance:
    """One whose bounds leave a gap, so the label DP has work to do after them."""
    for seed in range(40):
        inst = generated(seed, 24, caps=True)
        choices, _ = server_choices(inst)
        full = option_table(StageTerms(inst, server=choices[0].server))
        search = ChoiceSearch(inst, choices[0], full.within(choices[0].counts,
                                                             inst.resource_names))
        search.bound(None)
        if search.best.solution is not None and search._gap() > 1e-6 and len(choices) == 1:
            return inst
    raise AssertionError("no instance with a gap after the bounds")


def test_budget_reached_gives_the_best_plan_with_an_honest_gap() -> None:
    inst = hard_instance()
    optimum = exact_plan(inst)
    assert optimum.feasible and not optimum.notes
    budget = 0.5

    def slow_machine(p: Progress) -> None:
        # the solving thread burns its CPU budget once the bounds are done (the budget counts
        # CPU seconds: sleeping, or waiting for a busy core, would not spend it)
        if p.message.startswith("label DP"):
            start = time.thread_time()
            while time.thread_time() - start < budget + 0.1:
                pass

    plan = exact_v2(inst, budget_s=budget, progress=slow_machine)
    assert plan.feasible and plan.cost_per_hour is not None
    assert len(plan.notes) == 1
    note = plan.notes[0]
    assert f"the {budget:g} CPU-s budget was reached" in note
    found = GAP.search(note)
    assert found, note
    gap, cost, lower = (float(g.replace(",", "")) for g in found.groups())
    assert cost == pytest.approx(plan.cost_per_hour, abs=1e-3)
    assert plan.cost_per_hour >= optimum.cost_per_hour * (1 - 1e-9)
    assert lower <= optimum.cost_per_hour + 1e-3  # the bound is a true bound
    assert gap == pytest.approx(100 * (cost - lower) / cost, abs=0.01)
    assert gap > 0


def test_budget_through_the_scheduler_and_none_found_is_not_called_infeasible() -> None:
    inst = hard_instance()
    plan = create("exact", budget_s=0.0).plan(inst)  # out of time before anything
    assert not plan.feasible
    assert "not proven infeasible" in (plan.reason or "") and "--budget-s" in (plan.reason or "")
    full = create("exact", budget_s=math.inf).plan(inst)
    assert full.feasible and not full.notes
