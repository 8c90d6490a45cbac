"""`exact` stays optimal when every stage may go on spot: equal to brute force on small
random instances with spot markets, under the stagewise model (v1) and both sync modes of
v2, half of them with availability caps (`count`) and half with cost caps
(`--max-hourly-cost`, `--max-total-cost`), set around the uncapped optimum so that they
bind in many cases."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from heterps_core.costmodels.caps import NO_CAPS, CostCaps
from heterps_core.generate import random_instance
from heterps_core.instance import Instance, SpotMarket
from heterps_core.plan import Plan
from heterps_core.schedulers import create

MODES = ("v1", "async", "bsp")


def with_markets(inst: Instance, seed: int) -> Instance:
    """Spot offers on most resources, from clearly cheaper to not worth it."""
    rng = random.Random(f"spot-{seed}")
    resources = []
    for res in inst.resources:
        market = None
        if rng.random() < 0.8:
            market = SpotMarket(
                spot_price=round(res.price_per_hour * rng.uniform(0.15, 1.1), 4),
                interruptions_per_hour=round(rng.uniform(0.02, 6.0), 3),
                restart_s=round(rng.uniform(0.0, 900.0), 1),
            )
        resources.append(replace(res, market=market))
    return inst.replace(resources=tuple(resources))


def cost_caps(seed: int, optimum: Plan) -> CostCaps:
    """None for half the seeds; else an hourly cap, a total cap or both, each drawn from
    below to above the uncapped optimum's figure."""
    if seed % 4 < 2 or not optimum.feasible:
        return NO_CAPS
    assert optimum.cost_per_hour is not None and optimum.total_cost is not None
    rng = random.Random(f"caps-{seed}")
    which = rng.choice(("hourly", "total", "both"))
    hourly = optimum.cost_per_hour * rng.uniform(0.9, 1.5) if which != "total" else None
    total = optimum.total_cost * rng.uniform(0.4, 1.1) if which != "hourly" else None
    return CostCaps(hourly, total)


def case(seed: int) -> tuple[Instance, str]:
    mode = MODES[seed % 3]
    # L <= 6 under v1, L <= 4 under v2 (brute force prices each v2 assignment with a
    # search of its own); 2-3 resources
    n_layers, n_res = 2 + seed % (5 if mode == "v1" else 3), 2 + seed % 2
    inst = with_markets(random_instance(7000 + seed, n_layers, n_res, caps=seed % 2 == 1),
                        seed)
    return (inst if mode == "v1" else inst.as_v2(mode)), mode


def same_optimum(a: Plan, b: Plan) -> bool:
    if a.feasible != b.feasible:
        return False
    if not a.feasible:
        return True
    assert a.cost_per_hour and b.cost_per_hour and a.throughput and b.throughput
    return (abs(a.cost_per_hour - b.cost_per_hour) <= 1e-9 * b.cost_per_hour
            and abs(a.throughput - b.throughput) <= 1e-9 * b.throughput)


def check(seeds: range) -> dict[str, int]:
    seen = {"spot": 0, "on-demand": 0, "infeasible": 0, "capped": 0, "caps bind": 0}
    for seed in seeds:
        inst, mode = case(seed)
        exact, brute = create("exact").plan(inst), create("brute").plan(inst)
        assert same_optimum(exact, brute), (seed, mode, exact.to_dict(), brute.to_dict())
        caps = cost_caps(seed, brute)
        if caps.any:
            seen["capped"] += 1
            capped = create("exact", caps=caps).plan(inst)
            truth = create("brute", caps=caps).plan(inst)
            assert same_optimum(capped, truth), (seed, mode, caps, capped.to_dict(),
                                                 truth.to_dict())
            if not capped.feasible:
                assert capped.reason and capped.reason.startswith("no plan:"), capped.reason
            if not same_optimum(capped, exact):
                seen["caps bind"] += 1
            exact = capped
        if not exact.feasible:
            seen["infeasible"] += 1
            continue
        for stage in exact.stages:
            if not inst.has_markets:  # every plan without a market keeps the old JSON
                assert stage.market is None
                continue
            assert stage.market is not None
            seen[stage.market] += 1
    return seen


def test_equals_brute_on_20_spot_instances() -> None:
    seen = check(range(20))
    assert seen["spot"] > 0 and seen["on-demand"] > 0 and seen["caps bind"] > 0, seen


@pytest.mark.slow
def test_equals_brute_on_200_spot_instances() -> None:
    seen = check(range(200))
    assert seen["spot"] > 20 and seen["on-demand"] > 20, seen
    assert seen["capped"] >= 90 and seen["caps bind"] >= 30, seen
