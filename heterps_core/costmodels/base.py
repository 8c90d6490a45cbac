"""The cost model interface: what every solver, scoring, explanation and report asks of it.

One model is chosen per instance (`costmodels.cost_model_for`, by the instance's version) and
handed to whoever prices plans, as TorchRec's planner takes a perf model: solvers search,
the model says what a stage and a plan cost. Two models implement it: `v1.StagewiseModel`
(the spec's model: each stage provisioned on its own, the plan's cost the sum of its
stages') and `v2.model.JointModel` (sync mode, micro-batches, the parameter server: the
stages taking turns share one time budget, so a plan's units are chosen together).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heterps_core.costmodels import market
from heterps_core.costmodels.chain import ChainCosts
from heterps_core.instance import Instance
from heterps_core.plan import Plan, ServerPlacement

# A provisioned stage: first layer, last layer, resource, units.
UnitRun = tuple[int, int, str, int]


@dataclass(frozen=True)
class StageCost:
    """One stage provisioned on its own: the fewest units meeting target and memory."""

    units: int
    cost_per_hour: float
    throughput: float


@dataclass(frozen=True)
class Options:
    """The unit counts worth considering for one candidate stage (layers first..last)."""

    first: int
    last: int
    resource: str
    ahead: bool  # its own rate is all that counts (it overlaps every other stage)
    units: np.ndarray  # int
    cost: np.ndarray
    time_s: np.ndarray  # T(k)
    per_sample: np.ndarray  # T(k) / (k B)


class CostModel(ABC):
    """Prices stages and assignments of one instance."""

    version: ClassVar[int]
    # True: a plan is its stages each provisioned on its own (`stage`), its cost their sum;
    # searches may then cache stages. False: units are chosen for the whole plan.
    stagewise: ClassVar[bool]

    def __init__(self, instance: Instance, chain: ChainCosts | None = None) -> None:
        self.instance = instance
        self._chain = chain

    @property
    def chain(self) -> ChainCosts:
        """Prefix sums over the layers (built on first use)."""
        if self._chain is None:
            self._chain = ChainCosts(self.instance)
        return self._chain

    @abstractmethod
    def evaluate(self, assignment: Sequence[str], scheduler: str = "evaluate") -> Plan:
        """The cheapest provisioning of one assignment: a plan, or an infeasible one with
        every reason."""

    def evaluate_with_shards(self, assignment: Sequence[str], resource: str, shards: int,
                             scheduler: str = "evaluate") -> Plan:
        """`evaluate` with the parameter server fixed at `shards` shards of `resource` (a
        run's `--ps-shards` override), or an infeasible plan saying why it cannot be. A model
        without a server role has nothing to fix."""
        return self.infeasible(scheduler, "the instance has no parameter-server role (its "
                               "tables stay with their stage)", assignment)

    @abstractmethod
    def options(self, first: int, last: int, resource: str) -> Options | str:
        """The useful unit counts of layers first..last on `resource`, or why there is none."""

    @abstractmethod
    def price(self, runs: Sequence[UnitRun], server: ServerPlacement | None = None,
              scheduler: str = "evaluate") -> Plan:
        """The plan with exactly these stages and units (and server shards)."""

    @abstractmethod
    def row_wait_s(self, first: int, last: int, resource: str,
                   server: ServerPlacement | None) -> float:
        """Seconds per mini-batch the stage waits for the parameter server's rows."""

    @abstractmethod
    def memory_split(self, first: int, last: int) -> tuple[float, float]:
        """(GB per unit that does not split, GB that splits over the stage's units)."""

    def infeasible(self, scheduler: str, reason: str,
                   assignment: Sequence[str] | None = None) -> Plan:
        return Plan(
            scheduler=scheduler,
            feasible=False,
            assignment=tuple(assignment) if assignment is not None else None,
            reason=reason,
        )

    def stage(self, first: int, last: int, resource: str) -> StageCost | str:
        """Layers first..last on `resource` provisioned on their own (§4), or why they cannot
        be. Exact for a stagewise model; for the others a per-stage hint (RL features)."""
        chain = self.chain
        if not chain.runs_on(first, last, resource):
            return chain.cannot_run(first, last, resource)
        shape = chain.shape(first, last, resource)
        prov = chain.provision(shape)
        if prov.units is None:
            return prov.reason or "cannot be provisioned"
        return StageCost(prov.units, self.unit_cost(first, last, resource, prov.units),
                         shape.throughput(prov.units, self.instance.batch_size))

    def unit_cost(self, first: int, last: int, resource: str, units: int) -> float:
        """Expected $/h of the stage's `units` units in the cheaper market (market.py)."""
        return market.pick(self.instance.resource(resource), units,
                           market.state_gb(self.memory_split, first, last, units)).cost_per_hour

    def time_terms(self, first: int, last: int, resource: str, units: int,
                   server: ServerPlacement | None = None) -> dict[str, float]:
        """What a stage's time per mini-batch is made of, seconds per term."""
        inst = self.instance
        shape = self.chain.shape(first, last, resource)
        compute = sum(inst.layers[i].compute_s[resource] for i in range(first, last + 1))
        return {
            "compute": compute,
            "activations": shape.base_s - compute,
            "gradient all-reduce": (units - 1) / units * shape.sync_s,
            "row wait": self.row_wait_s(first, last, resource, server),
        }
