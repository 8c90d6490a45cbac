"""How far a plan's throughput could move with the spread of the figures it was priced from.

A measured compute_s figure may carry its spread (`Layer.compute_spread`: the median's
relative 95% half-width, docs/cost-model.md "Spread"). The band prices the same plan (its
stages, their units, the parameter-server shards) twice: with every figure it uses at the
slow end of its interval, and at the fast end. Throughput only falls as a compute time
grows, so these two bound it. Figures without a spread count as exact: the band is what the
measurements' own spread could do, not an estimate's error (`hardware/accuracy.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from heterps_core.costmodels import cost_model_for, cost_model_of
from heterps_core.instance import Instance
from heterps_core.plan import Plan

# A figure is never priced faster than this fraction of itself, whatever its spread says.
FLOOR = 0.01


@dataclass(frozen=True)
class ThroughputBand:
    """The plan's throughput and where it lands with every figure slow / fast."""

    throughput: float
    low: float
    high: float

    @property
    def minus(self) -> float:
        return 1 - self.low / self.throughput

    @property
    def plus(self) -> float:
        return self.high / self.throughput - 1

    def to_dict(self) -> dict[str, Any]:
        return {"low": round(self.low, 6), "high": round(self.high, 6),
                "minus": round(self.minus, 6), "plus": round(self.plus, 6)}

    def describe(self) -> str:
        return f"throughput band {self.range_text()}"

    def range_text(self) -> str:
        """The band alone, for a place already headed "throughput band" (the plan page)."""
        return (f"{self.low:,.0f}..{self.high:,.0f} samples/s "
                f"(-{self.minus:.1%} / +{self.plus:.1%}) from the measured figures' spread")


def throughput_band(instance: Instance, plan: Plan) -> ThroughputBand | None:
    """The band of a feasible plan priced on `instance`; None when no figure the plan's
    stages use has a spread."""
    if not plan.feasible or not plan.throughput or not plan.stages:
        return None
    if not any(instance.layers[i].compute_spread.get(stage.resource)
               for stage in plan.stages for i in stage.layers):
        return None
    instance = cost_model_of(instance, plan).instance
    return ThroughputBand(plan.throughput, _priced(_moved(instance, +1), plan),
                          _priced(_moved(instance, -1), plan))


def _moved(instance: Instance, sign: int) -> Instance:
    """Every compute figure moved to the slow (+1) or fast (-1) end of its interval."""
    layers = tuple(
        replace(layer, compute_s={
            res: seconds * max(FLOOR, 1 + sign * layer.compute_spread.get(res, 0.0))
            for res, seconds in layer.compute_s.items()})
        for layer in instance.layers
    )
    return instance.replace(layers=layers)


def _priced(instance: Instance, plan: Plan) -> float:
    """The plan's throughput on `instance` with its own stages and units."""
    runs = [(s.first, s.last, s.resource, s.units or 1) for s in plan.stages]
    priced = cost_model_for(instance).price(runs, plan.parameter_server, plan.scheduler)
    return priced.throughput or 0.0
