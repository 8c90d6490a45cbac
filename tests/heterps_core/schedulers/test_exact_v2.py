"""The exact solver under cost model v2 equals an independent brute force.

The brute force here shares nothing with the label DP but the per-stage time terms
(`StageTerms.times`, the formulas of docs/cost-model.md): it enumerates every assignment, every
unit count of every stage and every parameter-server host, and applies the v2 throughput rule
(ahead stages alone, the others taking turns over M micro-batches) and the caps directly.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from heterps_core.costmodel import REL_TOL, costs_equal, evaluate, stages_of
from heterps_core.costmodels.v2.server import place_server, server_need
from heterps_core.costmodels.v2.terms import StageTerms
from heterps_core.instance import Instance
from heterps_core.plan import ServerPlacement
from heterps_core.schedulers.exact import exact_plan

N_INSTANCES = 300


def _raw(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    n_layers, n_res = rng.randint(2, 4), rng.randint(2, 3)
    resources = [
        {"name": f"r{r}", "kind": "cpu" if r == 0 else "gpu",
         "price_per_hour": round(rng.uniform(0.5, 4), 2), "count": 3,
         "memory_gb": rng.choice([16, 64]), "network_gbps": rng.choice([10, 25])}
        for r in range(n_res)
    ]
    layers = []
    for i in range(n_layers):
        sparse = i < max(1, n_layers // 3)
        layers.append({
            "name": f"l{i}", "kind": "embedding" if sparse else "dense",
            "compute_s": {f"r{r}": rng.uniform(0.002, 0.03) for r in range(n_res)
                          if r == 0 or rng.random() > 0.15},
            "output_mb": rng.uniform(0.1, 3), "sync_mb": 0.0 if sparse else rng.uniform(0.1, 5),
            "memory_gb": rng.uniform(1, 40) if sparse else rng.uniform(0.1, 2),
            "shardable": sparse,
            "sparse_pull_mb": rng.uniform(0.1, 3) if sparse else 0.0,
            "sparse_push_mb": rng.uniform(0.1, 3) if sparse else 0.0,
            "sparse_rows": rng.uniform(1000, 30000) if sparse else 0.0,
        })
    data: dict[str, Any] = {
        "version": 2, "batch_size": 1000, "throughput_target": rng.uniform(20000, 90000),
        "input_mb": 1.0, "resources": resources, "layers": layers,
        "sync": "async" if seed % 4 < 2 else "bsp", "micro_batches": rng.choice([1, 2, 4]),
    }
    if rng.random() < 0.7:
        data["parameter_server"] = {"hosts": ["r0"] + (["r1"] if rng.random() < 0.5 else []),
                                    "row_s": {"r0": 1e-7}}
    return data


def brute(inst: Instance) -> tuple[float, float] | None:
    """(cost, throughput) of the optimum by enumeration, or None when nothing is feasible."""
    names, n = inst.resource_names, len(inst.layers)
    batch, target, micro = inst.batch_size, inst.throughput_target, inst.micro_batches
    counts = {r.name: r.count for r in inst.resources}
    need = server_need(inst)
    choices: list[tuple[ServerPlacement | None, dict[str, int]]] = [(None, counts)]
    if need is not None:
        assert inst.parameter_server is not None
        choices = []
        for host in inst.parameter_server.hosts:
            placed, _ = place_server(inst, host, need)
            if placed is not None:
                left = dict(counts)
                left[host] -= placed.shards
                choices.append((placed, left))
    best: tuple[float, float] | None = None
    for placed, left in choices:
        server_cost = placed.cost_per_hour if placed else 0.0
        server_rate = placed.throughput if placed else math.inf
        # the shards' host and number set each sparse stage's row wait
        terms = StageTerms(inst, left, placed)
        for assignment in itertools.product(names, repeat=n):
            runs = stages_of(assignment)
            if any(not terms.costs.runs_on(f, la, r) or left[r] < 1 for f, la, r in runs):
                continue
            for units in itertools.product(*[range(1, left[r] + 1) for _, _, r in runs]):
                used: dict[str, int] = {}
                for (_, _, r), k in zip(runs, units, strict=True):
                    used[r] = used.get(r, 0) + k
                if any(u > left[r] for r, u in used.items()):
                    continue
                cost, ahead, total, top, ok = server_cost, math.inf, 0.0, 0.0, True
                for (f, la, r), k in zip(runs, units, strict=True):
                    fixed, shared = terms.memory_gb(f, la)
                    if fixed + shared / k > inst.resource(r).memory_gb * (1 + REL_TOL):
                        ok = False
                        break
                    rate = k * batch / float(terms.times(f, la, r)[k - 1])
                    if rate < target * (1 - REL_TOL):
                        ok = False
                        break
                    if terms.runs_ahead(f, la):
                        ahead = min(ahead, rate)
                    else:
                        total, top = total + 1 / rate, max(top, 1 / rate)
                    cost += k * inst.resource(r).price_per_hour
                cycle = total / micro + (1 - 1 / micro) * top
                if not ok or cycle > (1 / target) * (1 + REL_TOL):
                    continue
                thr = min(ahead, 1 / cycle if cycle else math.inf, server_rate)
                if best is None or (
                    cost < best[0] if not costs_equal(cost, best[0])
                    else thr > best[1] * (1 + REL_TOL)
                ):
                    best = (cost, thr)
    return best


def instances() -> list[tuple[Instance, bool]]:
    """N_INSTANCES instances; the odd ones get a cap lowered below what their optimum uses."""
    out = []
    for seed in range(N_INSTANCES):
        data = _raw(seed)
        inst = Instance.from_dict(data)
        if seed % 2:
            plan = exact_plan(inst)
            if plan.feasible:
                used: dict[str, int] = {}
                for s in plan.stages:
                    used[s.resource] = used.get(s.resource, 0) + (s.units or 0)
                if plan.parameter_server:
                    ps = plan.parameter_server
                    used[ps.resource] = used.get(ps.resource, 0) + ps.shards
                res = max(used, key=lambda r: used[r] * inst.resource(r).price_per_hour)
                for item in data["resources"]:
                    if item["name"] == res and used[res] > 1:
                        item["count"] = used[res] - 1
                inst = Instance.from_dict(data)
        out.append((inst, bool(seed % 2)))
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[Instance, bool]]:
    return instances()


def test_exact_equals_brute_on_random_v2_instances(cases: list[tuple[Instance, bool]]) -> None:
    feasible = capped_changed = multi = 0
    modes = set()
    for inst, capped in cases:
        modes.add(inst.sync)
        plan = exact_plan(inst)
        truth = brute(inst)
        if truth is None:
            assert not plan.feasible, (inst.to_json(), plan.to_dict())
            capped_changed += capped
            continue
        assert plan.feasible, (inst.to_json(), plan.reason)
        assert plan.cost_per_hour is not None and plan.throughput is not None
        assert costs_equal(plan.cost_per_hour, truth[0]), (inst.to_json(), plan.to_dict(), truth)
        assert math.isclose(plan.throughput, truth[1], rel_tol=1e-7), (plan.to_dict(), truth)
        # evaluate on the optimum's assignment prices it the same
        again = evaluate(inst, list(plan.assignment or ()))
        assert again.feasible and costs_equal(again.cost_per_hour or 0, plan.cost_per_hour)
        feasible += 1
        multi += len(plan.stages) > 1
    assert modes == {"async", "bsp"}
    assert feasible >= N_INSTANCES // 2 and multi >= 30


def test_half_of_the_capped_instances_bind(cases: list[tuple[Instance, bool]]) -> None:
    """A lowered cap binds when the optimum gets dearer or infeasible."""
    bound = 0
    for seed, (inst, capped) in enumerate(cases):
        if not capped:
            continue
        free = exact_plan(Instance.from_dict(_raw(seed)))
        now = exact_plan(inst)
        if free.feasible and (not now.feasible or (now.cost_per_hour or 0) > (
            free.cost_per_hour or 0
        ) * (1 + 1e-9)):
            bound += 1
    assert bound >= N_INSTANCES // 4 * 0.8


def test_plan_records_sync_micro_batches_and_server() -> None:
    inst = Instance.from_dict(_raw(2))
    plan = exact_plan(inst)
    data = plan.to_dict()
    assert data["cost_model"] == 2
    assert data["sync"] == inst.sync and data["micro_batches"] == inst.micro_batches
    if plan.feasible and server_need(inst) is not None:
        ps = data["parameter_server"]
        assert ps["shards"] >= 1 and ps["resource"] in inst.parameter_server.hosts  # type: ignore[union-attr]
        stage_cost = sum(
            s.units * inst.resource(s.resource).price_per_hour for s in plan.stages  # type: ignore[operator]
        )
        assert math.isclose(plan.cost_per_hour or 0, stage_cost + ps["cost_per_hour"])


@pytest.mark.parametrize("name", ["brute", "greedy", "genetic", "random", "homogeneous",
                                  "heuristic"])
def test_every_scheduler_is_priced_by_v2_and_never_beats_exact(name: str) -> None:
    from heterps_core.schedulers import create

    for seed in range(0, 40, 4):
        inst = Instance.from_dict(_raw(seed))
        best = exact_plan(inst)
        plan = create(name, seed=seed, samples=200, generations=10).plan(inst)
        if plan.feasible:
            assert plan.cost_model == 2 and plan.sync == inst.sync
            assert best.feasible and best.cost_per_hour is not None
            assert (plan.cost_per_hour or 0) >= best.cost_per_hour * (1 - 1e-9)
