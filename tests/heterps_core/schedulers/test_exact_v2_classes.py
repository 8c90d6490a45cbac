"""Bounds by class of the longest stage (costmodels/v2/relax.py, used by exact_v2 when
M > 1): every class's bound holds for every plan of that class, found by enumeration, and
the search pruned by them still equals brute force (issue 15)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from heterps_core.costmodel import REL_TOL, costs_equal
from heterps_core.costmodels.v2.relax import Multipliers, Relaxation, grouped, partition_bound
from heterps_core.costmodels.v2.server import server_choices
from heterps_core.costmodels.v2.table import OptionTable, option_table
from heterps_core.costmodels.v2.terms import StageTerms
from heterps_core.instance import Instance
from heterps_core.schedulers import exact_v2
from heterps_core.schedulers.exact import exact_plan
from tests.heterps_core.schedulers.test_exact_v2 import _raw, brute, instances


def several_units(seed: int) -> Instance:
    """A small instance with M > 1 and up to 4 units per type (more unit choices per stage)."""
    data: dict[str, Any] = _raw(seed)
    data["micro_batches"] = [2, 4][seed % 2]
    for item in data["resources"]:
        item["count"] = 4
    return Instance.from_dict(data)


def chains(table: OptionTable, n: int) -> Iterator[list[int]]:
    """Every plan the table's options make (option indices, one per stage), stages covering
    layers 0..n-1 with no two neighbours on one resource."""
    ends = np.append(table.starts[1:], table.size)
    by_first: dict[int, list[tuple[int, int]]] = {}
    for s, e in zip(table.starts.tolist(), ends.tolist(), strict=True):
        by_first.setdefault(int(table.first[s]), []).append((s, e))

    def walk(i: int, prev: int) -> Iterator[list[int]]:
        if i == n:
            yield []
            return
        for s, e in by_first.get(i, []):
            r = int(table.res[s])
            if r == prev:
                continue
            for rest in walk(int(table.last[s]) + 1, r):
                for o in range(s, e):
                    yield [o, *rest]

    yield from walk(0, -1)


@pytest.mark.parametrize("seed", range(12))
def test_class_bounds_hold_for_every_plan_of_their_class(seed: int) -> None:
    inst = several_units(seed)
    micro, names = inst.micro_batches, inst.resource_names
    choice = server_choices(inst)[0][0]
    table = option_table(StageTerms(inst, server=choice.server)).within(choice.counts, names)
    if table.size == 0:
        pytest.skip("no stage meets the target")
    budget = (1 / inst.throughput_target) * (1 + REL_TOL)
    counts = np.array([choice.counts[r] for r in names])
    relax = Relaxation(table, len(inst.layers), len(names), micro, budget, counts)
    a_max = float(relax.turn_a.max())
    taus = a_max * np.array([0.2, 0.5, 0.8, 1.0])
    floors = np.concatenate([[0.0], taus[:-1]])
    rng = np.random.default_rng(seed)
    scale = float(table.cost.max()) / budget
    # per class its best lam of a grid (a bound close to the class's optimum, where an error
    # in the class's budget or options shows) and a random set (every one gives a bound)
    grid = np.concatenate([[0.0], scale * np.geomspace(1e-3, 1e2, 30)])
    lam, mu = np.zeros(8), np.zeros((8, len(names)))
    for c in range(4):
        trial = Multipliers(grid, np.zeros((grid.size, len(names))), np.full(grid.size, taus[c]),
                            np.full(grid.size, floors[c]))
        lam[2 * c] = grid[int(np.argmax(relax.tables(trial).value))]
        lam[2 * c + 1] = rng.uniform(0, 3 * scale)
        mu[2 * c + 1] = rng.uniform(0, 2, len(names))
    mult = Multipliers(lam, mu, np.repeat(taus, 2), np.repeat(floors, 2))
    tabs = relax.tables(mult)
    per_option = relax.option_bounds(tabs)
    order, starts = grouped(mult)
    checked = in_upper = 0
    for chosen in chains(table, len(inst.layers)):
        used = np.zeros(len(names))
        np.add.at(used, table.res[chosen], table.units[chosen])
        turns = relax.turn_a[chosen][~table.ahead[chosen]]
        longest = float(turns.max()) if turns.size else 0.0
        cycle = float(turns.sum()) / micro + (1 - 1 / micro) * longest
        if np.any(used > counts) or cycle > budget:
            continue
        cost = float(table.cost[chosen].sum())
        slack = 1e-9 * max(1.0, cost)
        cls = int(np.searchsorted(taus, longest * (1 - 1e-12)))
        sets = np.flatnonzero((mult.taus == taus[cls]) & (mult.floors == floors[cls]))
        assert np.all(tabs.value[sets] <= cost + slack), (chosen, cls)
        assert np.all(per_option[np.ix_(sets, chosen)] <= cost + slack), (chosen, cls)
        # the partition's bound (least over classes of each class's best) holds for every option
        bound = partition_bound(per_option[order][:, chosen], starts)
        assert np.all(bound <= cost + slack)
        checked += 1
        in_upper += cls > 0
    assert checked > 0
    if seed == 0:
        assert in_upper > 0  # plans whose longest stage is above the first class exist


def test_search_by_class_equals_brute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every M > 1 instance of the brute-force set, with the class bounds used from the start
    (no trial label DP), gives the brute-force optimum; the class search really ran."""
    monkeypatch.setattr(exact_v2, "_TRIAL_LABELS", 0)
    ran = [0]
    original = exact_v2.ChoiceSearch._classes

    def counted(self: exact_v2.ChoiceSearch, deadline: float | None) -> bool:
        used = original(self, deadline)
        ran[0] += used
        return used

    monkeypatch.setattr(exact_v2.ChoiceSearch, "_classes", counted)
    cases = [inst for inst, _ in instances() if inst.micro_batches > 1]
    cases += [several_units(seed) for seed in range(40)]
    for inst in cases:
        plan = exact_plan(inst)
        truth = brute(inst)
        if truth is None:
            assert not plan.feasible, inst.to_json()
            continue
        assert plan.feasible and plan.cost_per_hour is not None, (inst.to_json(), plan.reason)
        assert costs_equal(plan.cost_per_hour, truth[0]), (inst.to_json(), plan.to_dict(), truth)
        assert math.isclose(plan.throughput or 0, truth[1], rel_tol=1e-7), (plan.to_dict(), truth)
    assert ran[0] >= 30
