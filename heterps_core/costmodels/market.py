"""Spot or on-demand: what a stage's units cost in each market, and which one a plan takes.

A resource with a `market` (instance.SpotMarket) can rent its units on spot. A spot unit is
interrupted `interruptions_per_hour` times per hour on average; when one of a stage's `k`
units is, the stage loses the work done since its last checkpoint and waits `restart_s` for
a replacement, while all `k` units keep being paid. With checkpoints every `tau` seconds that
each take `delta` seconds to write, and a mean time between the stage's interruptions
`M = 3600 / (k r)`, the expected share of paid time that trains nothing is (first order)

    w(tau) = delta / tau + tau / (2 M) + restart_s / M,

least at Young/Daly's `tau* = sqrt(2 delta M)`, where `w* = sqrt(2 delta / M) + restart_s / M`.
A stage on spot then costs `k * spot_price * (1 + w*)` dollars per hour of useful work; on
demand `k * price_per_hour`. Each stage takes the cheaper (on-demand on a tie); the units, and
so the stage's throughput and the resource's `count`, are the same in both markets, so the
choice is the stage's own and every solver that minimises the sum of stage costs stays exact.

`delta`: the stage's state per unit (its memory per unit, GB: parameters, optimiser state and
table shards, as the instance gives it) written at CHECKPOINT_WRITE_GBPS by each unit at once.
The parameter server never goes on spot (its loss stops every stage). docs/cost-model.md
"Spot markets" has the same formulas and the limits of this first-order model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from heterps_core.costmodels.common import REL_TOL, job_length
from heterps_core.instance import Instance, Resource
from heterps_core.plan import Plan

# GB per second one unit writes its checkpoint at (a local NVMe / network volume's order of
# magnitude; the state per unit over it is the checkpoint's write time).
CHECKPOINT_WRITE_GBPS = 1.0
SPOT = "spot"
ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class MarketPick:
    """One stage's market: its expected $/h, and on spot the checkpoint interval and the
    interruptions per hour it expects."""

    market: str
    cost_per_hour: float
    checkpoint_s: float | None = None
    interruptions_per_hour: float = 0.0

    def checkpoint_every(self, time_per_batch_s: float) -> int | None:
        """The interval in whole steps (at least 1); None on demand."""
        if self.checkpoint_s is None:
            return None
        return max(1, round(self.checkpoint_s / time_per_batch_s))


def waste(delta_s: float | np.ndarray, mtbi_s: float | np.ndarray, restart_s: float,
          interval_s: float | np.ndarray | None = None) -> np.ndarray:
    """w(tau): the expected share of paid time that trains nothing, with checkpoints every
    `interval_s` (None: Young/Daly's tau*, where it is least). bench/spot.py prices the
    intervals it measures against tau* through this one formula."""
    delta = np.asarray(delta_s, dtype=np.float64)
    mtbi = np.asarray(mtbi_s, dtype=np.float64)
    if interval_s is None:
        return np.sqrt(2 * delta / mtbi) + restart_s / mtbi
    tau = np.asarray(interval_s, dtype=np.float64)
    return delta / tau + tau / (2 * mtbi) + restart_s / mtbi


def spot_costs(res: Resource, units: np.ndarray, state_gb: np.ndarray) -> np.ndarray:
    """Expected $/h of `units` spot units each holding `state_gb` (inf without a market)."""
    market = res.market
    if market is None:
        return np.full(np.shape(units), np.inf)
    k = np.asarray(units, dtype=np.float64)
    mtbi = 3600.0 / (k * market.interruptions_per_hour)
    delta = np.asarray(state_gb, dtype=np.float64) / CHECKPOINT_WRITE_GBPS
    return k * market.spot_price * (1 + waste(delta, mtbi, market.restart_s))


def on_spot(on_demand: np.ndarray, spot: np.ndarray) -> np.ndarray:
    """Where spot is strictly cheaper (beyond the objective's tolerance)."""
    return spot < on_demand - np.maximum(REL_TOL * on_demand, 1e-12)


def unit_costs(res: Resource, units: np.ndarray, state_gb: np.ndarray) -> np.ndarray:
    """Expected $/h of `units` units of `res` in the cheaper market (vectorised)."""
    on_demand = np.asarray(units, dtype=np.float64) * res.price_per_hour
    if res.market is None:
        return on_demand
    spot = spot_costs(res, units, state_gb)
    return np.where(on_spot(on_demand, spot), spot, on_demand)


def pick(res: Resource, units: int, state_gb: float) -> MarketPick:
    """The market one stage of `units` units takes, with what it costs."""
    on_demand = units * res.price_per_hour
    market = res.market
    if market is None:
        return MarketPick(ON_DEMAND, on_demand)
    spot = float(spot_costs(res, np.array([units]), np.array([state_gb]))[0])
    if not bool(on_spot(np.array([on_demand]), np.array([spot]))[0]):
        return MarketPick(ON_DEMAND, on_demand)
    rate = units * market.interruptions_per_hour
    mtbi = 3600.0 / rate
    return MarketPick(SPOT, spot, math.sqrt(2 * state_gb / CHECKPOINT_WRITE_GBPS * mtbi), rate)


# (first, last) -> (GB per unit that does not split, GB that splits over the units)
MemorySplit = Callable[[int, int], tuple[float, float]]


def state_gb(memory: MemorySplit, first: int, last: int, units: int) -> float:
    fixed, sharded = memory(first, last)
    return fixed + sharded / units


def with_markets(instance: Instance, plan: Plan, memory: MemorySplit) -> Plan:
    """A feasible plan with each stage's market and checkpoint interval, and its totals at
    those markets. Unchanged (the same object) when the instance has no market, so plans
    of such instances keep their exact JSON."""
    if not plan.feasible or not instance.has_markets:
        return plan
    stages, cost, rate = [], 0.0, 0.0
    for stage in plan.stages:
        assert stage.units is not None and stage.time_per_batch_s is not None
        chosen = pick(instance.resource(stage.resource), stage.units,
                      state_gb(memory, stage.first, stage.last, stage.units))
        stages.append(replace(stage, market=chosen.market,
                              checkpoint_every=chosen.checkpoint_every(stage.time_per_batch_s)))
        cost += chosen.cost_per_hour
        rate += chosen.interruptions_per_hour
    if plan.parameter_server is not None:
        cost += plan.parameter_server.cost_per_hour  # on demand: its loss stops every stage
    assert plan.throughput is not None
    hours, total = job_length(instance, plan.throughput, cost)
    return replace(plan, stages=tuple(stages), cost_per_hour=cost, hours=hours,
                   total_cost=total,
                   expected_interruptions=None if hours is None else rate * hours)
